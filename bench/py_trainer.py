#!/usr/bin/env python3
"""A PyTorch loop at a fixed step time for bench/pipetop_overhead.sh's
Python cases: each step busy-waits to --step-ms on the thread's CPU clock
in the forward, then runs a small MLP's backward and SGD step. Runs for
--seconds (default: until killed). It knows nothing about pipetop."""

import argparse
import time

import torch


class Net(torch.nn.Module):
    def __init__(self, step_ms: float) -> None:
        super().__init__()
        self.step_ms = step_ms
        self.body = torch.nn.Linear(64, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        end = time.thread_time() + self.step_ms / 1e3
        while time.thread_time() < end:  # the planted compute of a step
            pass
        return self.body(x)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--step-ms", type=float, default=1.0)
    ap.add_argument("--seconds", type=float, default=1e9)
    args = ap.parse_args()
    torch.set_num_threads(1)
    model = Net(args.step_ms)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x, y = torch.randn(32, 64), torch.randn(32, 1)
    end = time.monotonic() + args.seconds
    while time.monotonic() < end:
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()


if __name__ == "__main__":
    main()
