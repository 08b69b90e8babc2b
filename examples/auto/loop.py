#!/usr/bin/env python3
"""A plain training loop over a DataLoader with 2 workers. The loader is the
bottleneck: each worker needs 4 x 25 ms per batch (50 ms a batch with two),
the loop needs 20 ms forward + 10 ms optimizer, so about 40 % of each step is
data_wait. (The sleeps are long enough that a loaded machine's wake-up
delays, a few ms each, leave the shares near what is planted.) Run it under `pipetop run -- python3 examples/auto/loop.py`."""

import argparse

import torch
from torch.utils.data import DataLoader

from plant import SleepyDataset, SleepyNet, SlowSGD

ap = argparse.ArgumentParser()
ap.add_argument("--steps", type=int, default=40)
args = ap.parse_args()

loader = DataLoader(SleepyDataset(args.steps * 4, item_ms=25), batch_size=4, num_workers=2)
model = SleepyNet(forward_ms=20)
opt = SlowSGD(model.parameters(), step_ms=10)
loss_fn = torch.nn.MSELoss()
for x, y in loader:
    loss = loss_fn(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print("final loss %.4f" % loss.item())
