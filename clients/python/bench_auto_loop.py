#!/usr/bin/env python3
"""The loop bench_auto.py times: a DataLoader over in-memory tensors, an MLP
forward + backward + Adam step, and a busy-wait inside the forward (on the thread's CPU clock) that
makes each step last --step-ms. Prints the mean step time of the measured
steps (after --warmup) as JSON: wall time, and CPU time of the training
thread (which other processes on a busy machine do not inflate). It knows nothing about pipetop."""

import argparse
import json
import time

import torch
from torch.utils.data import DataLoader, TensorDataset

ap = argparse.ArgumentParser()
ap.add_argument("--step-ms", type=float, default=2.0)
ap.add_argument("--steps", type=int, default=500)
ap.add_argument("--warmup", type=int, default=50)
args = ap.parse_args()
torch.set_num_threads(1)


class Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        end = time.thread_time() + args.step_ms / 1e3
        while time.thread_time() < end:  # the planted compute of a step
            pass
        return self.body(x)


n = args.steps + args.warmup
loader = DataLoader(TensorDataset(torch.randn(n * 32, 64), torch.randn(n * 32, 1)), batch_size=32)
model = Net()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
t0 = None
for i, (x, y) in enumerate(loader):
    if i == args.warmup:
        t0, c0 = time.perf_counter(), time.thread_time()
    loss = torch.nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if i % 50 == 0:
        loss.item()  # logging
wall = (time.perf_counter() - t0) / args.steps
cpu = (time.thread_time() - c0) / args.steps
print(json.dumps({"step_ms": wall * 1e3, "cpu_ms": cpu * 1e3}))
