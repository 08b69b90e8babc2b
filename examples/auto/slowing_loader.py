#!/usr/bin/env python3
"""A training loop whose storage slows down partway, as a dataset that
outgrows the page cache does: each sample takes --fast-ms to read for the
first --after seconds, then --slow-ms. Batches of 4 load on the training
thread (no workers); steps of 8 ms (4 ms forward, 4 ms optimizer). With
the defaults data_wait goes from 0.4 ms to 12 ms a step: the steps get
2.4x slower after 9 s. Trains for --seconds."""

import argparse
import time

import torch
from torch.utils.data import DataLoader

from plant import SleepyDataset, SleepyNet, SlowSGD

ap = argparse.ArgumentParser()
ap.add_argument("--seconds", type=float, default=26)
ap.add_argument("--after", type=float, default=9)
ap.add_argument("--fast-ms", type=float, default=0.1)
ap.add_argument("--slow-ms", type=float, default=3)
args = ap.parse_args()

START = time.monotonic()


class Storage(SleepyDataset):
    """SleepyDataset whose reads slow down --after seconds in."""

    def __getitem__(self, i: int):
        slow = time.monotonic() - START >= args.after
        time.sleep((args.slow_ms if slow else args.fast_ms) / 1e3)
        return super().__getitem__(i)


loader = DataLoader(Storage(1_000_000), batch_size=4)
model = SleepyNet(forward_ms=4)
opt = SlowSGD(model.parameters(), step_ms=4)

for x, y in loader:
    loss = torch.nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if time.monotonic() - START >= args.seconds:
        break
