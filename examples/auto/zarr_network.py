#!/usr/bin/env python3
"""A plain CPU training loop: a network of matrix products on --threads
intra-op threads, fed by --workers DataLoader workers that read one frame
of each of the four cameras of a store make_zarr.py wrote, at random. On
multi-frame chunks every frame read decodes a whole chunk, on the cores the
network needs; on 1-frame chunks a read decodes its frame.
Run it under `pipetop run -- python3 examples/auto/zarr_network.py DATA.zarr`."""

import argparse
import time

import numpy as np
import torch
import zarr
from torch.utils.data import DataLoader, Dataset, RandomSampler

ap = argparse.ArgumentParser()
ap.add_argument("data")
ap.add_argument("--seconds", type=float, default=20)
ap.add_argument("--workers", type=int, default=2)
ap.add_argument("--threads", type=int, default=2)
ap.add_argument("--batch", type=int, default=16)
ap.add_argument("--epoch", type=int, default=0,
                help="samples an epoch draws, at random with replacement (0: each frame once, shuffled)")
ap.add_argument("--size", type=int, default=512, help="the network's matrix side")
ap.add_argument("--layers", type=int, default=6)
args = ap.parse_args()


class Frames(Dataset):
    """The four cameras' frames at one time step, as float32 in [0, 1],
    subsampled to 8x8."""

    def __init__(self, path: str) -> None:
        root = zarr.open_group(path, mode="r")
        self.cameras = [root["data/camera%d" % c] for c in range(4)]

    def __len__(self) -> int:
        return self.cameras[0].shape[0]

    def __getitem__(self, i: int) -> torch.Tensor:
        frames = [cam[i] for cam in self.cameras]
        step = max(1, frames[0].shape[0] // 8)
        return torch.from_numpy(np.stack(frames)[:, ::step, ::step][:, :8, :8].astype(np.float32) / 255)


def worker_init(_: int) -> None:
    torch.set_num_threads(1)


class Net(torch.nn.Module):
    """Matrix products on the intra-op threads, then a small head."""

    def __init__(self) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(args.size, args.size) / args.size ** 0.5)
        self.head = torch.nn.Linear(4 * 8 * 8 * 3, args.size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.head(x.flatten(1))
        h = h.repeat(args.size // h.shape[0] + 1, 1)[: args.size]  # a square activation: real work per layer
        for _ in range(args.layers):
            h = torch.tanh(h @ self.w)
        return h.mean()


torch.set_num_threads(args.threads)
frames = Frames(args.data)
# A long epoch keeps its end, where the workers wait for the next one, out
# of a short run.
sampler = RandomSampler(frames, replacement=True, num_samples=args.epoch) if args.epoch else RandomSampler(frames)
loader = DataLoader(frames, batch_size=args.batch, sampler=sampler, num_workers=args.workers,
                    worker_init_fn=worker_init, persistent_workers=args.workers > 0)
model = Net()
opt = torch.optim.SGD(model.parameters(), lr=1e-4)
start = time.monotonic()
while time.monotonic() - start < args.seconds:
    for x in loader:
        loss = model(x).pow(2)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if time.monotonic() - start >= args.seconds:
            break
