#!/usr/bin/env python3
"""CPU bf16 autocast around the forward pass. Planted per step: 20 ms forward,
12 ms optimizer, 8 ms of logging outside every stage (other): 50 % forward,
30 % optim, 20 % other."""

import argparse
import time

import torch

from plant import SleepyNet, SlowSGD

ap = argparse.ArgumentParser()
ap.add_argument("--steps", type=int, default=20)
args = ap.parse_args()

model = SleepyNet(forward_ms=20)
opt = SlowSGD(model.parameters(), step_ms=12)
data = torch.randn(args.steps, 4, 8)
for x in data:
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = model(x)
        loss = out.float().pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    time.sleep(0.008)  # logging, checkpoints: untimed work
print("final loss %.4f (%s)" % (loss.detach().float(), out.dtype))
