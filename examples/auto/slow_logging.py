#!/usr/bin/env python3
"""A plain training loop that calls a slow logging function of its own on
every step (log_metrics: it rebuilds and serializes the whole history),
outside every operation pipetop times, so the time lands in `other`. Run it
under `pipetop run -- python3 examples/auto/slow_logging.py`."""

import argparse
import json
import time

import torch
from torch.utils.data import DataLoader, TensorDataset

ap = argparse.ArgumentParser()
ap.add_argument("--seconds", type=float, default=6)
args = ap.parse_args()

history = []


def log_metrics(step: int) -> int:
    """Append the step's metrics and serialize the last 200 (slow on purpose)."""
    history.append({"step": step, "lr": 0.01, "tags": ["t%d" % i for i in range(100)]})
    text = json.dumps(history[-200:], indent=1, sort_keys=True)
    return len(text)


torch.set_num_threads(1)
data = TensorDataset(torch.randn(4096, 16), torch.randn(4096, 1))
loader = DataLoader(data, batch_size=32, shuffle=True)
model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
start = time.monotonic()
step = 0
while time.monotonic() - start < args.seconds:
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        log_metrics(step)
        step += 1
        if time.monotonic() - start >= args.seconds:
            break
