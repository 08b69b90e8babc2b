"""A planted loader over many files (plain PyTorch; never imports pipetop):
each item is one file read whole and "decoded" (~15 ms of single-threaded
numpy), 2 workers; the network is tiny. Warm (the files in the page cache)
the loader is decode-bound; from a cold cache behind a slow disk it is
storage-bound.

    python3 files.py --dir DIR          (DIR holds the files, *.bin)
    python3 files.py --dir DIR --control cold|loader [--seconds S]

With --control it measures its own loader alone after a short warm-up, the
files evicted from the page cache first for cold (POSIX_FADV_DONTNEED on
each), and prints {"control": MODE, "samples_per_sec": X}.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import sys
import time
from typing import Any, List

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class Files(Dataset):
    """One item a file: its bytes read whole, then decoded."""

    def __init__(self, paths: List[str]) -> None:
        self.paths = paths

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, i: int) -> Any:
        with open(self.paths[i], "rb") as f:
            raw = np.frombuffer(f.read(), dtype=np.uint8)
        a = raw[:65536].astype(np.float64)
        for _ in range(150):
            a = np.sin(a) * 1.0001 + 0.01
        return torch.from_numpy(a[:16].astype(np.float32)), torch.tensor([float(raw[0])])


def evict(paths: List[str]) -> None:
    """Drop the files from the page cache."""
    for p in paths:
        fd = os.open(p, os.O_RDONLY)
        try:
            os.fdatasync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dir", required=True)
    p.add_argument("--control", choices=("cold", "loader"))
    p.add_argument("--seconds", type=float, default=5.0)
    a = p.parse_args()
    paths = sorted(glob.glob(os.path.join(a.dir, "*.bin")))
    if not paths:
        sys.exit("no *.bin files in %s" % a.dir)
    torch.manual_seed(0)
    torch.set_num_threads(1)
    loader = DataLoader(Files(paths), batch_size=4, shuffle=True, num_workers=2, persistent_workers=True, drop_last=True)
    if a.control:
        if a.control == "cold":
            evict(paths)
        control(loader, a.control, a.seconds)
        return
    model = nn.Linear(16, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.001)
    while True:
        for x, y in loader:
            loss = nn.functional.mse_loss(model(x), y * 1e-3)
            opt.zero_grad()
            loss.backward()
            opt.step()


def control(loader: DataLoader, mode: str, seconds: float) -> None:
    """The loader alone: one batch of warm-up (the workers' start), then
    samples/s over seconds."""
    it = iter(loader)
    next(it)
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        try:
            x, _ = next(it)
        except StopIteration:
            it = iter(loader)
            continue
        n += len(x)
    print(json.dumps({"control": mode, "samples_per_sec": round(n / (time.perf_counter() - t0), 2)}), flush=True)


if __name__ == "__main__":
    sys.exit(main())
