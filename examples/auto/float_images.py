#!/usr/bin/env python3
"""A plain training loop over 4 cameras of 128x128x3 images and a joint
vector per sample, through a DataLoader with 2 workers. With --float the
Dataset returns the images as float32 holding 0..255 (what a
`torch.from_numpy(frame).float()` in __getitem__ gives): every batch
carries 4x the bytes of the uint8 frames from the workers to the main
process. Without it the Dataset returns the uint8 frames and the training
step converts them (`.float()` in the model's forward, on the device when there is one: on the
CPU, only the pixels the model reads). The step's device work is --step-ms
of sleep.
Run it under `pipetop run -- python3 examples/auto/float_images.py --float`."""

import argparse
import time

import torch
from torch.utils.data import DataLoader, Dataset

ap = argparse.ArgumentParser()
ap.add_argument("--float", action="store_true", help="the Dataset returns float32 images (0..255)")
ap.add_argument("--workers", type=int, default=2)
ap.add_argument("--batch", type=int, default=32)
ap.add_argument("--batches", type=int, default=24)
ap.add_argument("--step-ms", type=float, default=2)
args = ap.parse_args()

CAMERAS, SIDE = 4, 128


class Episodes(Dataset):
    """64 distinct recorded samples, repeated."""

    def __init__(self) -> None:
        g = torch.Generator().manual_seed(0)
        self.frames = torch.randint(0, 256, (64, CAMERAS, SIDE, SIDE, 3), dtype=torch.uint8, generator=g)
        self.joints = torch.randn(64, 14, generator=g)

    def __len__(self) -> int:
        return args.batch * args.batches

    def __getitem__(self, i: int) -> dict:
        f = self.frames[i % 64]
        sample = {"cam%d" % c: f[c].float() if args.float else f[c] for c in range(CAMERAS)}
        sample["joints"] = self.joints[i % 64]
        return sample


class Policy(torch.nn.Module):
    """Per-camera features (the mean colour of every 8th pixel: on the CPU
    the conversion is made on those, on a GPU converting the whole image
    costs next to nothing, so both ways compute the same) and the joints,
    into a linear head. Its forward is the first to touch each batch's
    images, as a real encoder's is."""

    def __init__(self) -> None:
        super().__init__()
        self.head = torch.nn.Linear(CAMERAS * 3 + 14, 7)

    def forward(self, batch: dict) -> torch.Tensor:
        feats = []
        for c in range(CAMERAS):
            img = batch["cam%d" % c][:, ::8, ::8].to(device)
            if img.dtype == torch.uint8:
                img = img.float()
            feats.append(img.mean(dim=(1, 2)) / 255)
        return self.head(torch.cat(feats + [batch["joints"].to(device)], dim=1))


torch.set_num_threads(1)
device = "cuda" if torch.cuda.is_available() else "cpu"
model = Policy().to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
loader = DataLoader(Episodes(), batch_size=args.batch, num_workers=args.workers)
for batch in loader:
    loss = model(batch).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    time.sleep(args.step_ms / 1e3)
    opt.step()
