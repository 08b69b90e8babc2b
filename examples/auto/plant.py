"""Planted costs shared by the examples in this folder: a dataset, a module
and an optimizer that sleep for known times, so that a test can check the
stage shares pipetop measures against what the scripts plant. Nothing here
knows about pipetop."""

from __future__ import annotations

import time

import torch
from torch import nn
from torch.utils.data import Dataset


class SleepyDataset(Dataset):
    """Random samples, each taking item_ms to produce."""

    def __init__(self, size: int, features: int = 8, item_ms: float = 0.0) -> None:
        self.size, self.features, self.item_s = size, features, item_ms / 1e3

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, i: int):
        if self.item_s:
            time.sleep(self.item_s)
        g = torch.Generator().manual_seed(i)
        x = torch.randn(self.features, generator=g)
        return x, x.sum(0, keepdim=True)


class SleepyNet(nn.Module):
    """A small MLP whose forward also sleeps forward_ms."""

    def __init__(self, features: int = 8, forward_ms: float = 0.0) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(features, 16), nn.ReLU(), nn.Linear(16, 1))
        self.forward_s = forward_ms / 1e3

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.forward_s:
            time.sleep(self.forward_s)
        return self.body(x)


class SlowSGD(torch.optim.SGD):
    """SGD whose step also sleeps step_ms."""

    def __init__(self, params, lr: float = 0.01, step_ms: float = 0.0) -> None:
        super().__init__(params, lr=lr)
        self.step_s = step_ms / 1e3

    def step(self, closure=None):
        if self.step_s:
            time.sleep(self.step_s)
        return super().step(closure)
