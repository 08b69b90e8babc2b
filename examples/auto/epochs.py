#!/usr/bin/env python3
"""A training loop over a small dataset for several epochs. Planted: 64
samples, batch 8 (8 batches an epoch), 2 DataLoader workers, each of which
opens its dataset for 1.5 s when it starts (--open-s, in worker_init_fn);
steps of 20 ms (12 ms forward, 8 ms optimizer). Without --persistent the
DataLoader starts 2 new workers every epoch, so every 8th step waits about
1.5 s for them; with it (persistent_workers=True) the workers start once.
--item-ms makes each sample cost that much: with persistent workers and
--item-ms 4 (a batch in about 32 ms, two workers faster than the loop),
only each epoch's first batch waits, as nothing prefetches it; --passes K
(a sampler that draws K passes' worth of samples per epoch, the fix pipetop
advises) makes that wait K times rarer."""

import argparse
import time

import torch
from torch.utils.data import DataLoader, RandomSampler

from plant import SleepyDataset, SleepyNet, SlowSGD

ap = argparse.ArgumentParser()
ap.add_argument("--epochs", type=int, default=10)
ap.add_argument("--open-s", type=float, default=1.5)
ap.add_argument("--persistent", action="store_true")
ap.add_argument("--item-ms", type=float, default=0.0)
ap.add_argument("--passes", type=int, default=1)
args = ap.parse_args()


def open_dataset(worker_id: int) -> None:
    """Open the dataset in this worker (an index to load, a store to
    connect to)."""
    time.sleep(args.open_s)


data = SleepyDataset(64, item_ms=args.item_ms)
sampler = RandomSampler(data, replacement=True, num_samples=args.passes * len(data)) if args.passes > 1 else None
loader = DataLoader(data, batch_size=8, sampler=sampler, num_workers=2, worker_init_fn=open_dataset, persistent_workers=args.persistent)
model = SleepyNet(forward_ms=12)
opt = SlowSGD(model.parameters(), step_ms=8)

for epoch in range(args.epochs):
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    print("epoch %d loss %.4f" % (epoch, loss.item()))
