#!/usr/bin/env python3
"""A plain CPU training loop for the CPU verdicts: --threads intra-op
threads in the main process and in each of --workers DataLoader workers
(--worker-threads in each worker instead, when set)
(each worker's items are --products matrix products too; without workers
the items are cheap). More threads than cores in
all is oversubscription; --threads equal to the cores and no workers uses
every core on purpose. With --python the step is pure-Python work on the
training thread (cheap data, one thread busy).
Run it under `pipetop run -- python3 examples/auto/threads.py --threads 4 --workers 2`."""

import argparse
import time

import torch
from torch.utils.data import DataLoader, Dataset

ap = argparse.ArgumentParser()
ap.add_argument("--threads", type=int, default=1)
ap.add_argument("--workers", type=int, default=0)
ap.add_argument("--worker-threads", type=int, default=0, help="intra-op threads in each worker (0: --threads)")
ap.add_argument("--size", type=int, default=384)
ap.add_argument("--products", type=int, default=3, help="matrix products in each worker's item")
ap.add_argument("--python", action="store_true")
ap.add_argument("--seconds", type=float, default=60)
args = ap.parse_args()


class Products(Dataset):
    """Each item is a few matrix products: loader work that uses the
    worker's intra-op threads."""

    def __len__(self) -> int:
        return 1_000_000

    def __getitem__(self, i: int) -> torch.Tensor:
        if args.python or not args.workers:
            return torch.zeros(8)
        a = torch.rand(args.size, args.size)
        for _ in range(args.products):
            a = torch.tanh(a @ a)
        return a[0, :8]


def worker_init(_: int) -> None:
    torch.set_num_threads(args.worker_threads or args.threads)


def python_work() -> float:
    """Pure-Python arithmetic: holds the GIL on the training thread."""
    s = 0.0
    for i in range(60_000):
        s += (i % 7) * 0.5
    return s


torch.set_num_threads(args.threads)
loader = DataLoader(Products(), batch_size=2, num_workers=args.workers,
                    worker_init_fn=worker_init if args.workers else None)
class Net(torch.nn.Module):
    """A tiny linear layer after the step's real work: matrix products on
    the intra-op threads, or (--python) pure-Python arithmetic."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(8, 1)
        self.w = torch.rand(args.size, args.size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if args.python:
            python_work()
        else:
            h = self.w
            for _ in range(4):
                h = torch.tanh(h @ self.w)
        return self.lin(x)


model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
start = time.monotonic()
for x in loader:
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    if time.monotonic() - start >= args.seconds:
        break
