#!/usr/bin/env python3
"""A plain CPU training loop with a second thread in the same process, for
the GIL verdict: --side spin starts a "metrics-logger" thread that sums
numbers in pure Python all the time (it holds the GIL, so the training
thread waits for it between torch ops); --side mm a "precompute" thread
that multiplies large matrices with torch (torch releases the GIL inside
the product); --side sleep a logger that wakes every half second; --side
none no thread at all.
Run it under `pipetop run -- python3 examples/auto/side_thread.py --side spin`."""

import argparse
import threading
import time

import torch
from torch.utils.data import DataLoader, TensorDataset

ap = argparse.ArgumentParser()
ap.add_argument("--side", choices=["spin", "mm", "sleep", "none"], default="spin")
ap.add_argument("--seconds", type=float, default=60)
args = ap.parse_args()

torch.set_num_threads(1)
stop = threading.Event()


def log_metrics() -> None:
    """Sums the squares of a range, again and again, in pure Python."""
    history = []
    while not stop.is_set():
        total = 0
        for i in range(20_000):
            total += i * i
        history.append(total)
        if len(history) > 1000:
            history.clear()


def precompute() -> None:
    """Large matrix products: torch runs them without the GIL."""
    a = torch.rand(768, 768)
    while not stop.is_set():
        a = torch.tanh(torch.mm(a, a))


def log_now_and_then() -> None:
    """Wakes up twice a second to log a line's worth of work."""
    while not stop.wait(0.5):
        sum(range(1000))


side = {"spin": (log_metrics, "metrics-logger"), "mm": (precompute, "precompute"),
        "sleep": (log_now_and_then, "metrics-logger")}.get(args.side)
if side is not None:
    threading.Thread(target=side[0], name=side[1], daemon=True).start()

data = TensorDataset(torch.rand(4096, 64), torch.rand(4096, 1))
loader = DataLoader(data, batch_size=32, shuffle=True)
model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 128), torch.nn.ReLU(),
                            torch.nn.Linear(128, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
start = time.monotonic()
while time.monotonic() - start < args.seconds:
    for x, y in loader:
        loss = (model(x) - y).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if time.monotonic() - start >= args.seconds:
            break
stop.set()
