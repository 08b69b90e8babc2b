#!/usr/bin/env python3
"""A plain training loop over a robomimic-style HDF5 file make_hdf5.py
wrote with h5py: a Dataset whose item is one frame of one demonstration
(data/demo_K/obs/agentview_image[t]), shuffled, with 2 DataLoader workers.
On one chunk per trajectory every frame read decompresses the whole
trajectory; on 1-frame chunks it decompresses the frame. --open init opens
the file in the Dataset's __init__, before the workers fork (a common
pattern, and a known source of errors: HDF5 is not fork-safe); the default
opens it lazily in each worker.
Run it under `pipetop run -- python3 examples/auto/hdf5_loop.py DATA.hdf5`."""

import argparse
import time

import h5py
import torch
from torch.utils.data import DataLoader, Dataset

ap = argparse.ArgumentParser()
ap.add_argument("data")
ap.add_argument("--seconds", type=float, default=6)
ap.add_argument("--workers", type=int, default=2)
ap.add_argument("--open", default="lazy", choices=("lazy", "init"))
args = ap.parse_args()


class Frames(Dataset):
    """One camera frame per item, as float32 in [0, 1], subsampled to 8x8
    for a small model."""

    def __init__(self, path: str, open_now: bool) -> None:
        self.path = path
        with h5py.File(path, "r") as f:
            self.index = [(k, t) for k in sorted(f["data"]) for t in range(f["data"][k]["actions"].shape[0])]
        self.file = h5py.File(path, "r") if open_now else None
        self.images = {}

    def __len__(self) -> int:
        return len(self.index)

    def __getitem__(self, i: int) -> torch.Tensor:
        if self.file is None:
            self.file = h5py.File(self.path, "r")
        k, t = self.index[i]
        if k not in self.images:
            self.images[k] = self.file["data"][k]["obs/agentview_image"]
        frame = self.images[k][t]
        return torch.from_numpy(frame[::10, ::10].copy()).float() / 255


torch.set_num_threads(1)  # a small model: leave the cores to the loader
data = Frames(args.data, args.open == "init")
loader = DataLoader(data, batch_size=16, shuffle=True, num_workers=args.workers)
model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.LazyLinear(32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
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
