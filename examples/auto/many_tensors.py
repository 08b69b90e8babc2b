#!/usr/bin/env python3
"""A plain training loop whose Dataset returns each sample as --tensors
separate tensors (a list of per-timestep features): the DataLoader's
collate stacks them position by position, so each batch crosses from a
worker to the main process as --tensors shared-memory tensors, and the
main process rebuilds every one of them (a handle to receive and map per
tensor). With --tensors 1 the same values come as one tensor per sample.
The step's device work is --step-ms of sleep.
Run it under `pipetop run -- python3 examples/auto/many_tensors.py --tensors 256`."""

import argparse
import time

import torch
from torch.utils.data import DataLoader, Dataset

ap = argparse.ArgumentParser()
ap.add_argument("--tensors", type=int, default=256, help="tensors per sample")
ap.add_argument("--workers", type=int, default=2)
ap.add_argument("--batch", type=int, default=16)
ap.add_argument("--batches", type=int, default=30)
ap.add_argument("--step-ms", type=float, default=2)
args = ap.parse_args()

STEPS, FEATURES = 256, 64


class Windows(Dataset):
    def __init__(self) -> None:
        self.data = torch.randn(32, STEPS, FEATURES, generator=torch.Generator().manual_seed(0))

    def __len__(self) -> int:
        return args.batch * args.batches

    def __getitem__(self, i: int):
        x = self.data[i % 32]
        if args.tensors == 1:
            return x.clone()
        return [p.clone() for p in x.chunk(args.tensors)]


torch.set_num_threads(1)
model = torch.nn.Linear(FEATURES, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for batch in DataLoader(Windows(), batch_size=args.batch, num_workers=args.workers):
    x = batch if torch.is_tensor(batch) else torch.cat(batch, dim=1)
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    time.sleep(args.step_ms / 1e3)
    opt.step()
