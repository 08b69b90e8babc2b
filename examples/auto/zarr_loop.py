#!/usr/bin/env python3
"""A plain training loop over a Dataset that reads single frames of the
four cameras of a store make_zarr.py wrote with zarr-python, shuffled,
with 2 DataLoader workers. On zarr's default chunking every frame read
decodes whole multi-frame chunks; on 1-frame chunks it decodes the frame.
Run it under `pipetop run -- python3 examples/auto/zarr_loop.py DATA.zarr`."""

import argparse
import time

import numpy as np
import torch
import zarr
from torch.utils.data import DataLoader, Dataset

ap = argparse.ArgumentParser()
ap.add_argument("data")
ap.add_argument("--seconds", type=float, default=6)
ap.add_argument("--workers", type=int, default=2)
args = ap.parse_args()


class Frames(Dataset):
    """The four cameras' frames at one time step, as float32 in [0, 1],
    subsampled to 8x8 for a small model."""

    def __init__(self, path: str) -> None:
        root = zarr.open_group(path, mode="r")
        self.cameras = [root["data/camera%d" % c] for c in range(4)]

    def __len__(self) -> int:
        return self.cameras[0].shape[0]

    def __getitem__(self, i: int) -> torch.Tensor:
        frames = [cam[i] for cam in self.cameras]
        return torch.from_numpy(np.stack(frames)[:, ::4, ::4].astype(np.float32) / 255)


torch.set_num_threads(1)  # a small model: leave the cores to the loader
loader = DataLoader(Frames(args.data), batch_size=16, shuffle=True, num_workers=args.workers)
model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(4 * 8 * 8 * 3, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
start = time.monotonic()
while time.monotonic() - start < args.seconds:
    for x in loader:
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if time.monotonic() - start >= args.seconds:
            break
