#!/usr/bin/env python3
"""A training loop that keeps every step's loss in a list with its graph
(`losses.append(loss)`): each kept loss holds its step's activations, so
the process's resident memory grows steadily (about 0.5 MB a step). With
--item the list keeps `loss.item()` instead: the healthy twin. Nothing
here knows about pipetop."""

import argparse
import time

import torch
from torch import nn

ap = argparse.ArgumentParser()
ap.add_argument("--item", action="store_true", help="keep loss.item(), not the loss with its graph")
ap.add_argument("--seconds", type=float, default=16)
args = ap.parse_args()

torch.set_num_threads(1)
model = nn.Sequential(nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 1))
opt = torch.optim.SGD(model.parameters(), lr=1e-4)
losses = []
start = time.monotonic()
while time.monotonic() - start < args.seconds:
    x = torch.randn(64, 1024)
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward(retain_graph=not args.item)
    opt.step()
    losses.append(loss.item() if args.item else loss)
    time.sleep(0.015)
print("mean loss", float(sum(float(v) for v in losses[-10:]) / 10))
