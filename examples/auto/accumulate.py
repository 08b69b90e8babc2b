#!/usr/bin/env python3
"""Gradient accumulation: 4 micro-batches per optimizer step, loaded on the
training thread (num_workers=0). Planted per optimizer step: 4 x (2 x 3 ms)
= 24 ms loading, 4 x 6 ms forward, 12 ms optimizer: 40 % data_wait, 40 %
forward, 20 % optim. One step per optimizer step."""

import argparse

import torch
from torch.utils.data import DataLoader

from plant import SleepyDataset, SleepyNet, SlowSGD

ap = argparse.ArgumentParser()
ap.add_argument("--steps", type=int, default=15)
ap.add_argument("--accumulate", type=int, default=4)
args = ap.parse_args()

loader = DataLoader(SleepyDataset(args.steps * args.accumulate * 2, item_ms=3), batch_size=2)
model = SleepyNet(forward_ms=6)
opt = SlowSGD(model.parameters(), step_ms=12)
for i, (x, y) in enumerate(loader):
    loss = torch.nn.functional.mse_loss(model(x), y) / args.accumulate
    loss.backward()
    if (i + 1) % args.accumulate == 0:
        opt.step()
        opt.zero_grad()
print("final loss %.4f" % loss.item())
