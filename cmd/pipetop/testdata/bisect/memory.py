"""A planted script for bisect's memory (plain PyTorch, CPU; never imports
pipetop): the script itself never grows its memory, so no phase may.

    python3 memory.py --case resnet|bigbatch

  resnet    torchvision's resnet18 (11.7M parameters) on 32 images of
            3x112x112 a batch, made on the training thread (no workers,
            whose memory would dwarf the rest): activations of a few hundred
            MB a step, which a forward phase that kept the graph of its
            skipped backward alive into the next step would hold twice
  bigbatch  batches of 24 MiB (128 images of 3x128x128 float32) from 2
            workers into a network of about half a second a step (most of
            it a sleep standing for a device's work: the pace, not the
            CPU, is what this case needs): a cache of
            42 of them is 1 GB, bisect's own memory, never the script's; at
            that pace a replay that brought the cached batches into memory
            while measured (shared memory from the workers counts once
            touched) would read as memory creeping by 24 MiB a step
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any, Tuple

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class Images(Dataset):
    """n random images of shape, and a class; the same each epoch."""

    def __init__(self, n: int, shape: Tuple[int, ...]) -> None:
        self.n, self.shape = n, shape

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> Any:
        g = torch.Generator().manual_seed(i)
        return torch.rand(self.shape, generator=g), i % 10


class Device(nn.Module):
    """Half a second of a device's work a forward, slept."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        time.sleep(0.45)
        return x


def convs() -> nn.Module:
    """The images pooled, then small convolutions, and the device's half a
    second a step."""
    return nn.Sequential(nn.AvgPool2d(8), nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), Device(), nn.Linear(32, 10))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--case", required=True, choices=("resnet", "bigbatch"))
    a = p.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(2)
    if a.case == "resnet":
        import torchvision

        model = torchvision.models.resnet18(num_classes=10)
        data, batch, workers = Images(4096, (3, 112, 112)), 32, 0
    else:
        model = convs()
        data, batch, workers = Images(8192, (3, 128, 128)), 128, 2
    loader = DataLoader(data, batch_size=batch, shuffle=True, num_workers=workers, persistent_workers=workers > 0, drop_last=True)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    while True:
        for x, y in loader:
            loss = loss_fn(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()


if __name__ == "__main__":
    sys.exit(main())
