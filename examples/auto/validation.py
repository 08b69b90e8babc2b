#!/usr/bin/env python3
"""A training loop with a validation pass every 10 steps. Planted: training
steps of 16 ms (8 ms forward, 8 ms optimizer); each validation pass runs 5
batches of 10 ms forward under torch.no_grad (50 ms, counted as eval in the
step it follows, never as a step). With 30 steps: 480 ms training, 150 ms
eval: 24 % eval, 38 % forward, 38 % optim."""

import argparse

import torch
from torch.utils.data import DataLoader

from plant import SleepyDataset, SleepyNet, SlowSGD

ap = argparse.ArgumentParser()
ap.add_argument("--steps", type=int, default=30)
ap.add_argument("--every", type=int, default=10)
args = ap.parse_args()

train = DataLoader(SleepyDataset(args.steps * 4), batch_size=4)
val = DataLoader(SleepyDataset(20), batch_size=4)
model = SleepyNet(forward_ms=8)
opt = SlowSGD(model.parameters(), step_ms=8)


def validate() -> float:
    model.eval()
    model.forward_s = 0.010
    total = 0.0
    with torch.no_grad():
        for x, y in val:
            total += torch.nn.functional.mse_loss(model(x), y).item()
    model.forward_s = 0.008
    model.train()
    return total


for i, (x, y) in enumerate(train):
    loss = torch.nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if (i + 1) % args.every == 0:
        print("step %d val loss %.4f" % (i + 1, validate()))
