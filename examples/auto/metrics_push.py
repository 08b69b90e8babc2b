#!/usr/bin/env python3
"""A training loop that logs on every step and, every --every steps, pushes
its metrics to a tracker and waits for the answer. Planted: steps of 8 ms
(4 ms forward, 4 ms optimizer) plus --log-ms in log_metrics; every --every
steps push_metrics blocks for --push-ms (a synchronous upload). Both run on
the training thread between the timed stages: untimed work, steady on every
step and a pause every --every steps."""

import argparse
import time

import torch
from torch.utils.data import DataLoader

from plant import SleepyDataset, SleepyNet, SlowSGD

ap = argparse.ArgumentParser()
ap.add_argument("--steps", type=int, default=1000)
ap.add_argument("--every", type=int, default=200)
ap.add_argument("--log-ms", type=float, default=1)
ap.add_argument("--push-ms", type=float, default=400)
args = ap.parse_args()

history = []


def log_metrics(step: int, loss: float) -> None:
    """Keeps the step's loss, as a metrics logger's buffer does."""
    history.append((step, loss))
    time.sleep(args.log_ms / 1e3)


def push_metrics() -> None:
    """Sends the buffered metrics and waits for the tracker's answer."""
    time.sleep(args.push_ms / 1e3)
    history.clear()


loader = DataLoader(SleepyDataset(args.steps * 4), batch_size=4)
model = SleepyNet(forward_ms=4)
opt = SlowSGD(model.parameters(), step_ms=4)

for i, (x, y) in enumerate(loader):
    loss = torch.nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    log_metrics(i, loss.item())
    if (i + 1) % args.every == 0:
        push_metrics()
