"""Planted training scripts for `pipetop tune` (plain PyTorch, CPU only;
never imports pipetop).

    python3 train.py --case CASE [--workers N] [--prefetch P] [--persistent 0|1]
                     [--worker-threads N] [--steps N] [--seconds S] [--mb MB]

The training DataLoader is made on one line, marked "THE TRAINING
DATALOADER" (tune's plans name it by that line), once, before the epochs.
Each case's defaults are the "user's" settings, a poor choice; the options
override them by hand. Without --steps it trains until stopped; with it,
it ends by printing one line of JSON:
{"case": C, "samples_per_sec": X, "steps": N, "seconds": S} (the batches
after the first, from the first's arrival on).

Cases, each with a known best setting (on a 2-core machine):

  cpu_items        each item costs ~3 ms of single-threaded numpy; the user
                   loads on the training thread (--workers 0). Best: workers
                   up to about the cores (2): the items are loaded in
                   parallel and beside the step; beyond the cores no gain.
  storage          each item waits ~5 ms on "storage" (a sleep, the GIL
                   released) and costs nearly no CPU; the user has 2
                   workers. Best: far more workers than cores (8-16): the
                   waits overlap.
  threaded_decode  each item runs ~2 ms of single-threaded numpy and a
                   256x256 matmul, tanh and a scale in torch (a few
                   parallel regions); the user's worker_init_fn gives each
                   worker a torch thread per core (os.cpu_count()), so 2
                   workers run 4 spinning OpenMP threads on 2 cores and
                   every region waits for a thread the other worker holds
                   off its core (10-20x slower than one thread each,
                   measured). Best: worker_threads=1 (the plan's cap, over
                   the user's own call), with 2-4 workers (both keep the
                   2 cores busy; 4 measured up to 1.3x faster here), and
                   loading on the training thread (no workers) runs the
                   numpy part on one core.
  worker_start     each worker's start costs 1 s (a sleep in
                   worker_init_fn: a lazy open of remote storage) and an
                   epoch is 8 batches of cpu_items' ~3 ms items; the user
                   has 2 workers and persistent_workers=False, so every
                   epoch pays the start. Best: persistent_workers=True with
                   2 workers (the start is paid once; the items still need
                   both cores). Without persistence no worker count beats
                   loading on the training thread, so a search that keeps
                   the script's persistence ends at num_workers=0.
  compute          cheap in-memory items, a heavy network (3 1024-wide
                   layers at batch 64): the step is the network's. Best:
                   nothing helps (workers only take cores from the
                   network; no setting gains beyond noise).
  inproc_cache     each item costs ~10 ms of numpy the first time it is
                   read, then is kept in the dataset's own dict (an
                   in-process cache); the user has 1 worker, not
                   persistent: each epoch's fresh worker starts from the
                   main process's empty cache and pays every item again.
                   Best: num_workers=0 (the cache fills once, on the
                   training thread, and every later epoch is free: >= 5x
                   the user's setting in loader trials and in full runs).
  memory           the dataset holds a --mb (default 600) MB array that each
                   worker copies at its start (np.copy in worker_init_fn,
                   a per-worker cache), and each item waits ~5 ms on
                   storage, as storage's do; the user has 2 workers
                   (~2.5 GB with the main process). More workers overlap
                   the waits, as in storage, but each copies the array:
                   16 workers would take ~11 GB, so tune's memory guard
                   must stop the trials that fill the memory allowed (a
                   test lowers the limit, or --mb, to see it on a small
                   box) and keep the best that fits.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
import time
from typing import Any, Callable, Dict, Optional

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

CASES = ("cpu_items", "storage", "threaded_decode", "worker_start", "compute", "memory", "inproc_cache")

# The user's settings of each case (workers, prefetch_factor, persistent).
DEFAULTS: Dict[str, Dict[str, Any]] = {
    "cpu_items": {"workers": 0},
    "storage": {"workers": 2},
    "threaded_decode": {"workers": 2},
    "worker_start": {"workers": 2, "persistent": 0},
    "compute": {"workers": 0},
    "memory": {"workers": 2},
    "inproc_cache": {"workers": 1, "persistent": 0},
}

BATCH = {"compute": 64, "worker_start": 8}  # batch size per case; else 16
ITEMS = {"worker_start": 64, "inproc_cache": 256}  # items per epoch per case; else 4096


# ---------------------------------------------------------------------------
# Datasets


class Items(Dataset):
    """n items of shape (16,) and a target, each made by cost(i) (the case's
    work per item) where a case has one."""

    def __init__(self, n: int, cost: Optional[Callable[[int], Any]] = None) -> None:
        self.n = n
        self.cost = cost

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> Any:
        x = torch.full((16,), float(i % 7))
        if self.cost is not None:
            x = x + float(self.cost(i))
        return x, torch.tensor([float(i % 3)])


def numpy_item(i: int) -> float:
    """~3 ms of single-threaded numpy (an elementwise sine and a sort)."""
    a = np.sin(np.arange(30000, dtype=np.float64) * (i + 1))
    return float(np.sort(a)[i % 30000] * 1e-3)


def storage_item(i: int) -> float:
    """~5 ms spent waiting on storage (the GIL released), no CPU."""
    time.sleep(0.005)
    return 0.0


_W = torch.randn(256, 256) / 16


def decode_item(i: int) -> float:
    """~2 ms of single-threaded numpy (the part of a decode no thread pool
    splits), then a 256x256 matmul, tanh and a scale: a few parallel regions
    over every intra-op thread torch has."""
    a = torch.tanh(torch.randn(256, 256) @ _W)
    b = np.sort(np.sin(np.arange(20000, dtype=np.float64) * (i + 1)))
    return float((a * 0.99 + 0.01)[0, 0] + b[i % 20000]) * 1e-3


class KeptItems(Items):
    """The inproc_cache case: each item computed once (~10 ms of numpy),
    then served from the dataset's own dict, which a DataLoader worker
    fills in its own copy of the dataset and loses when it exits."""

    def __init__(self, n: int) -> None:
        super().__init__(n)
        self.kept: Dict[int, Any] = {}

    def __getitem__(self, i: int) -> Any:
        item = self.kept.get(i)
        if item is None:
            x, y = super().__getitem__(i)
            a = np.sin(np.arange(100000, dtype=np.float64) * (i + 1))
            item = self.kept[i] = (x + float(np.sort(a)[i] * 1e-3), y)
        return item


class Cached(Items):
    """The memory case: items read from a large array that each worker
    copies at its start (a per-worker cache)."""

    def __init__(self, n: int, mb: int) -> None:
        super().__init__(n)
        self.data = np.ones(mb * (1 << 20) // 8, dtype=np.float64)

    def warm(self, worker_id: int) -> None:
        """The worker's start: its own copy of the array."""
        self.data = np.copy(self.data)

    def __getitem__(self, i: int) -> Any:
        x, y = super().__getitem__(i)
        off = (i * 4096) % (len(self.data) - 20000)
        return x + float(np.sort(self.data[off:off + 20000])[0] + storage_item(i)) * 1e-3, y


# ---------------------------------------------------------------------------
# The case's pieces


def raise_threads(worker_id: int, n: int = 0) -> None:
    """threaded_decode's worker_init_fn: the user's thread per core in each
    worker (torch gives a worker 1), or n threads set by hand."""
    torch.set_num_threads(n or os.cpu_count() or 1)


def slow_start(worker_id: int) -> None:
    """worker_start's worker_init_fn: a 1 s lazy open of storage."""
    time.sleep(1.0)


def dataset(case: str, mb: int) -> Items:
    """The case's dataset."""
    n = ITEMS.get(case, 4096)
    if case == "memory":
        return Cached(n, mb)
    if case == "inproc_cache":
        return KeptItems(n)
    cost = {"cpu_items": numpy_item, "worker_start": numpy_item, "storage": storage_item, "threaded_decode": decode_item}.get(case)
    return Items(n, cost)


def worker_init(args: argparse.Namespace, data: Items) -> Optional[Callable[[int], None]]:
    """The case's worker_init_fn (None: the default)."""
    if args.case == "memory":
        return data.warm
    if args.case == "threaded_decode":
        return functools.partial(raise_threads, n=args.worker_threads)
    return {"worker_start": slow_start}.get(args.case)


def network(case: str) -> nn.Module:
    """A tiny network, or the compute case's heavy one."""
    if case == "compute":
        return nn.Sequential(nn.Linear(16, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(),
                             nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 1))
    return nn.Linear(16, 1)


def settings(args: argparse.Namespace) -> argparse.Namespace:
    """args with the case's user settings where no option gave one."""
    for name, value in DEFAULTS[args.case].items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    args.workers = args.workers or 0
    args.persistent = args.persistent or 0
    return args


def loader_extra(args: argparse.Namespace) -> Dict[str, Any]:
    """prefetch_factor and persistent_workers where they apply (torch
    refuses them without workers)."""
    if not args.workers:
        return {}
    extra: Dict[str, Any] = {"persistent_workers": bool(args.persistent)}
    if args.prefetch is not None:
        extra["prefetch_factor"] = args.prefetch
    return extra


# ---------------------------------------------------------------------------
# The loop


WARMUP_S = 2.0  # --seconds counts from this long after the first batch


def train(args: argparse.Namespace) -> None:
    """Train until --steps (0: until stopped); print the rate at the end."""
    data = dataset(args.case, args.mb)
    init = worker_init(args, data)
    extra = loader_extra(args)
    loader = DataLoader(data, batch_size=BATCH.get(args.case, 16), shuffle=True, num_workers=args.workers, worker_init_fn=init, **extra)  # THE TRAINING DATALOADER
    model = network(args.case)
    opt = torch.optim.SGD(model.parameters(), lr=0.001)
    steps = samples = 0
    first = t0 = None  # the first batch's time; where the rate's window starts
    while True:
        for x, y in loader:
            now = time.perf_counter()
            first = now if first is None else first
            if t0 is None and now - first >= (WARMUP_S if args.seconds else 0):
                t0 = now  # the rate counts the batches after this one
            loss = (model(x) - y).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            samples += len(x) if t0 is not None and now > t0 else 0
            steps += 1
            if steps == args.steps or (args.seconds and t0 is not None and now - t0 >= args.seconds):
                seconds = time.perf_counter() - t0
                print(json.dumps({"case": args.case, "samples_per_sec": round(samples / seconds, 1),
                                  "steps": steps, "seconds": round(seconds, 2)}), flush=True)
                return


def main(argv: Optional[list] = None) -> None:
    """Parse the options and train."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--case", required=True, choices=CASES)
    p.add_argument("--workers", type=int, help="num_workers (default: the case's user setting)")
    p.add_argument("--prefetch", type=int, help="prefetch_factor (default: torch's)")
    p.add_argument("--persistent", type=int, choices=(0, 1), default=None, help="persistent_workers (default 0)")
    p.add_argument("--steps", type=int, default=0, help="stop after N steps (default: until stopped)")
    p.add_argument("--seconds", type=float, default=0,
                   help="stop after S seconds counted from %g s after the first batch (every worker started)" % WARMUP_S)
    p.add_argument("--mb", type=int, default=600, help="the memory case's array size in MB")
    p.add_argument("--worker-threads", type=int, default=0,
                   help="threaded_decode: torch threads in each worker, set by hand (default: the user's, one per core)")
    train(settings(p.parse_args(argv)))


if __name__ == "__main__":
    sys.exit(main())
