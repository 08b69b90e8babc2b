#!/usr/bin/env python3
"""A small conv net trained on uint8 images from 2 DataLoader workers, with
torchvision's RandomResizedCrop and ColorJitter applied per sample in the
training loop (on the training thread, before the model): the loop's
transforms are most of each step. With --in-dataset the same transforms
run in the Dataset's __getitem__ (in the workers): the healthy twin.
Nothing here knows about pipetop."""

import argparse
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset
from torchvision import transforms as T

ap = argparse.ArgumentParser()
ap.add_argument("--in-dataset", action="store_true", help="transform in __getitem__ (the workers), not in the loop")
ap.add_argument("--batch", type=int, default=8)
ap.add_argument("--seconds", type=float, default=60)
args = ap.parse_args()

augment = T.Compose([T.RandomResizedCrop(64, antialias=True), T.ColorJitter(0.4, 0.4, 0.4, 0.1)])


class Images(Dataset):
    """Random 3x128x128 uint8 images (as decoded frames come)."""

    def __len__(self) -> int:
        return 1_000_000

    def __getitem__(self, i: int):
        img = torch.randint(0, 256, (3, 128, 128), dtype=torch.uint8, generator=torch.Generator().manual_seed(i))
        if args.in_dataset:
            return augment(img), i % 10
        return img, i % 10


class Net(nn.Module):
    """A small conv net."""

    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, 16, 3), nn.ReLU(), nn.Conv2d(16, 16, 3, stride=2), nn.ReLU(),
                                  nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 10))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x)


torch.set_num_threads(1)
loader = DataLoader(Images(), batch_size=args.batch, num_workers=2)
model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
start = time.monotonic()
for imgs, labels in loader:
    if not args.in_dataset:
        imgs = torch.stack([augment(img) for img in imgs])
    x = imgs.float() / 255
    loss = nn.functional.cross_entropy(model(x), labels)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if time.monotonic() - start > args.seconds:
        break
