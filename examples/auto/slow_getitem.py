#!/usr/bin/env python3
"""A plain training loop whose Dataset spends its time in a pure-Python
function of its own (augment, a per-pixel loop), with 2 DataLoader
workers: the loader is the bottleneck and augment is why. Run it under
`pipetop run -- python3 examples/auto/slow_getitem.py`."""

import argparse
import time

import torch
from torch.utils.data import DataLoader, Dataset

ap = argparse.ArgumentParser()
ap.add_argument("--seconds", type=float, default=6)
args = ap.parse_args()


def augment(pixels):
    """Brightness jitter, one pixel at a time (slow on purpose)."""
    out = []
    for p in pixels:
        out.append(min(255, (p * 37 + 11) % 251 + p // 3))
    return out


class Jittered(Dataset):
    def __len__(self) -> int:
        return 100_000

    def __getitem__(self, i: int) -> torch.Tensor:
        pixels = list(range(i % 7, i % 7 + 6000))
        return torch.tensor(augment(pixels)[:64], dtype=torch.float32) / 255


torch.set_num_threads(1)
loader = DataLoader(Jittered(), batch_size=8, num_workers=2)
model = torch.nn.Linear(64, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
start = time.monotonic()
for x in loader:
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    if time.monotonic() - start >= args.seconds:
        break
