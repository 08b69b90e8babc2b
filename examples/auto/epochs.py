#!/usr/bin/env python3
"""A training loop over a small dataset for several epochs. Planted: 64
samples, batch 8 (8 batches an epoch), 2 DataLoader workers, each of which
opens its dataset for 1.5 s when it starts (--open-s, in worker_init_fn);
steps of 20 ms (12 ms forward, 8 ms optimizer). Without --persistent the
DataLoader starts 2 new workers every epoch, so every 8th step waits about
1.5 s for them; with it (persistent_workers=True) the workers start once."""

import argparse
import time

import torch
from torch.utils.data import DataLoader

from plant import SleepyDataset, SleepyNet, SlowSGD

ap = argparse.ArgumentParser()
ap.add_argument("--epochs", type=int, default=10)
ap.add_argument("--open-s", type=float, default=1.5)
ap.add_argument("--persistent", action="store_true")
args = ap.parse_args()


def open_dataset(worker_id: int) -> None:
    """Open the dataset in this worker (an index to load, a store to
    connect to)."""
    time.sleep(args.open_s)


loader = DataLoader(SleepyDataset(64), batch_size=8, num_workers=2, worker_init_fn=open_dataset, persistent_workers=args.persistent)
model = SleepyNet(forward_ms=12)
opt = SlowSGD(model.parameters(), step_ms=8)

for epoch in range(args.epochs):
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    print("epoch %d loss %.4f" % (epoch, loss.item()))
