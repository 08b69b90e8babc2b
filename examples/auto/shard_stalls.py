#!/usr/bin/env python3
"""A training loop whose Dataset opens a new shard every 64 samples.
Planted: samples of 1 ms each, batch 8, 2 DataLoader workers, steps of
20 ms (12 ms forward, 8 ms optimizer); the first sample of each shard
opens it for 0.4 s (--open-s: a remote store's latency). Every 8th batch
starts a shard, and always on the same worker, so every 8th step waits
for it: the workers cannot hide it. The fix: open the shards once per
worker (or keep them open), not in the fetch that first needs them."""

import argparse
import time

import torch
from torch.utils.data import DataLoader

from plant import SleepyDataset, SleepyNet, SlowSGD

ap = argparse.ArgumentParser()
ap.add_argument("--steps", type=int, default=300)
ap.add_argument("--open-s", type=float, default=0.4)
args = ap.parse_args()

SHARD = 64  # samples a shard


class Sharded(SleepyDataset):
    """SleepyDataset whose samples live in shards of SHARD samples."""

    def __getitem__(self, i: int):
        if i % SHARD == 0:
            open_shard(i // SHARD)
        return super().__getitem__(i)


def open_shard(k: int) -> None:
    """Open shard k (a file on a remote store: its latency)."""
    time.sleep(args.open_s)


loader = DataLoader(Sharded(1 << 20, item_ms=1), batch_size=8, num_workers=2)
model = SleepyNet(forward_ms=12)
opt = SlowSGD(model.parameters(), step_ms=8)

for step, (x, y) in enumerate(loader):
    loss = torch.nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step + 1 >= args.steps:
        break
print("loss %.4f" % loss.item())
