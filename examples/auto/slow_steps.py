#!/usr/bin/env python3
"""A plain training loop of slow steps (about 2 s each, as a large model on
a CPU takes): every batch takes --read-ms to read (read_from_storage
sleeps, in the loop's own process: num_workers=0) and the model's forward
--compute-ms (heavy_layer sleeps, standing for a big matrix product
without taking a core from whoever else runs). --read-ms 1500
--compute-ms 500 plants an input-bound run, --read-ms 20 --compute-ms
1900 a compute-bound one. A viewer that attaches a few seconds in sees
at most one step end in its first second.
Run it under `pipetop run -- python3 examples/auto/slow_steps.py`."""

import argparse
import time

import torch
from torch.utils.data import DataLoader, Dataset

ap = argparse.ArgumentParser()
ap.add_argument("--batch", type=int, default=4)
ap.add_argument("--read-ms", type=float, default=1500)
ap.add_argument("--compute-ms", type=float, default=500)
ap.add_argument("--seconds", type=float, default=120)
args = ap.parse_args()


def read_from_storage(seconds: float) -> None:
    """Stands for a slow read."""
    time.sleep(seconds)


class Slow(Dataset):
    def __len__(self) -> int:
        return 1_000_000

    def __getitem__(self, i: int) -> torch.Tensor:
        if i % args.batch == 0:
            read_from_storage(args.read_ms / 1e3)
        return torch.full((8,), float(i % 10))


class Model(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(8, 1)

    def heavy_layer(self, x: torch.Tensor) -> torch.Tensor:
        time.sleep(args.compute_ms / 1e3)
        return x

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(self.heavy_layer(x))


torch.set_num_threads(1)
loader = DataLoader(Slow(), batch_size=args.batch, num_workers=0)
model = Model()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
start = time.monotonic()
for x in loader:
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    if time.monotonic() - start >= args.seconds:
        break
