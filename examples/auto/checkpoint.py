#!/usr/bin/env python3
"""A training loop that saves a checkpoint every 25 steps. Planted: steps
of 8 ms (4 ms forward, 4 ms optimizer) of a small head over a frozen 64 M
parameter embedding table (256 MB of float32 in the state_dict); every 25
steps torch.save writes the model and optimizer state to --out (about 256
MB each time)."""

import argparse
import os

import torch
from torch import nn
from torch.utils.data import DataLoader

from plant import SleepyDataset, SleepyNet, SlowSGD

ap = argparse.ArgumentParser()
ap.add_argument("--steps", type=int, default=600)
ap.add_argument("--every", type=int, default=25)
ap.add_argument("--out", default="checkpoint.pt")
ap.add_argument("--table", type=int, default=64_000_000, help="frozen embedding parameters")
args = ap.parse_args()


class Policy(nn.Module):
    """A trained head over frozen pre-trained embeddings."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(args.table // 1000, 1000).requires_grad_(False)
        self.head = SleepyNet(forward_ms=4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(x)


def save_checkpoint(step: int) -> None:
    torch.save({"step": step, "model": model.state_dict(), "optim": opt.state_dict()}, args.out + ".tmp")
    os.replace(args.out + ".tmp", args.out)


loader = DataLoader(SleepyDataset(args.steps * 4), batch_size=4)
model = Policy()
opt = SlowSGD(model.head.parameters(), step_ms=4)

for i, (x, y) in enumerate(loader):
    loss = torch.nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if (i + 1) % args.every == 0:
        save_checkpoint(i + 1)
if os.path.exists(args.out):
    os.remove(args.out)
