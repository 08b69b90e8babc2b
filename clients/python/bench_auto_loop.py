#!/usr/bin/env python3
"""The loop bench_auto.py times: a DataLoader over in-memory tensors, an MLP
forward + backward + Adam step, and a busy-wait inside the forward (on the thread's CPU clock) that
makes each step last --step-ms. Prints the mean step time of the measured
steps (after --warmup) as JSON: wall time, and CPU time of the training
thread (which other processes on a busy machine do not inflate). It knows nothing about pipetop;
bench_auto.py also imports it to time blocks of steps in one process."""

import argparse
import json
import time
from typing import Any, Iterator, Tuple

import torch
from torch.utils.data import DataLoader, TensorDataset


class Net(torch.nn.Module):
    def __init__(self, step_ms: float) -> None:
        super().__init__()
        self.step_ms = step_ms
        self.body = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        end = time.thread_time() + self.step_ms / 1e3
        while time.thread_time() < end:  # the planted compute of a step
            pass
        return self.body(x)


def build(step_ms: float, steps: int) -> Tuple[DataLoader, Net, torch.optim.Optimizer]:
    """The loader (enough batches for steps), model and optimizer."""
    torch.set_num_threads(1)
    loader = DataLoader(TensorDataset(torch.randn(steps * 32, 64), torch.randn(steps * 32, 1)), batch_size=32)
    model = Net(step_ms)
    return loader, model, torch.optim.Adam(model.parameters(), lr=1e-3)


def run(it: Iterator[Any], model: Net, opt: torch.optim.Optimizer, steps: int, first: int = 0) -> None:
    """steps training steps taking batches from it."""
    for i in range(first, first + steps):
        x, y = next(it)
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if i % 50 == 0:
            loss.item()  # logging


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--step-ms", type=float, default=2.0)
    ap.add_argument("--steps", type=int, default=500)
    ap.add_argument("--warmup", type=int, default=50)
    args = ap.parse_args()
    loader, model, opt = build(args.step_ms, args.steps + args.warmup)
    it = iter(loader)
    run(it, model, opt, args.warmup)
    t0, c0 = time.perf_counter(), time.thread_time()
    run(it, model, opt, args.steps, args.warmup)
    wall = (time.perf_counter() - t0) / args.steps
    cpu = (time.thread_time() - c0) / args.steps
    print(json.dumps({"step_ms": wall * 1e3, "cpu_ms": cpu * 1e3}))


if __name__ == "__main__":
    main()
