"""Planted training scripts for `pipetop bisect` (plain PyTorch, CPU only;
never imports pipetop).

    python3 train.py --case CASE [--steps N] [--control MODE [--seconds S]]

Without --steps it trains for many epochs, until stopped. With --control it
measures one part of the pipeline itself, after a short warm-up, and prints
one line of JSON: {"control": MODE, "samples_per_sec": X, "steps": N, "seconds": S}
(the ddp case: one line per rank, with "rank"; all ranks measure the same
number of steps).

  loader   iterate the training loader alone (as the loader phase does)
  network  forward+backward+optimizer (upload included) on its own first
           batches held in memory (as the cached phase does)
  forward  forward only on those batches (as the forward phase does)
  full     its own normal loop
  cold     the loader control, its data files evicted from the page cache first

Cases (each a known bottleneck):

  input       zarr frames with default chunks, 2 workers: the loader (whole
              chunks decompressed per frame) is well slower than the network
  compute     in-memory data, heavy network: cached ~= full
  contention  CPU-heavy loader workers and a 2-thread network: each alone
              fast, together slower than both
  seed        num_workers=0, data ~1/3 of the step, a network of many tiny
              ops: cached ~1.5x full
  trainval    a train and a validation loader (validation every epoch)
  dict        batches are dicts of tensors (--batch-type dataclass: a dataclass)
  iterable    an IterableDataset without __len__
  crash       after 20 steps asserts the parameters changed (they do not when
              backward and optimizer steps are skipped)
  ddp         2 Gloo ranks (launch.sh), DistributedSampler, DDP; rank 1's data
              is slower per item
  slow        a loader slower than one batch every 4 s (1 worker, 8 items of
              0.55 s of waiting a batch: a batch every 4.4 s; the worker's
              batch in flight holds up its shutdown for up to 4.4 s) and a network of
              ~20-40 ms a step, compute-bound (three 112-channel convolutions):
              the network control runs on one fixed batch

--control cold is the loader control with the case's data files (the input
case's zarr store) evicted from the page cache first (POSIX_FADV_DONTNEED on
each), as pipetop bisect's cold phase does; cases without files read memory.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import os
import sys
import tempfile
import time
from typing import Any, Callable, Iterator, List, Optional

import numpy as np
import torch
from torch import nn
from torch.utils.data import BatchSampler, DataLoader, Dataset, IterableDataset, RandomSampler, TensorDataset

DEVICE = torch.device("cpu")
WARMUP_S = 1.0  # each control's own warm-up
WARMUP_STEPS = 20  # the same, on ranks that must take the same steps
CACHED = 8  # batches the network/forward controls hold in memory


# ---------------------------------------------------------------------------
# Data


def _frames(n: int) -> np.ndarray:
    """n compressible uint8 3x32x32 frames (a gradient plus noise)."""
    rng = np.random.default_rng(0)
    base = np.linspace(0, 255, 32 * 32).reshape(32, 32)
    return ((base[None, None] + rng.integers(0, 8, (n, 3, 32, 32))) % 256).astype("u1")


def zarr_data(root: Optional[str], n: int = 2000) -> str:
    """The input case's zarr store (frames, targets) with default chunks,
    written once (temp name, rename)."""
    import zarr

    root = root or os.path.join(tempfile.gettempdir(), "pipetop-bisect-input-%d" % os.getuid())
    path = os.path.join(root, "frames.zarr")
    if os.path.exists(path):
        return path
    os.makedirs(root, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="frames-", dir=root)
    g = zarr.open_group(tmp, mode="w")
    g.create_dataset("x", data=_frames(n))  # default chunks: a frame spans 8 chunks of 1000 frames
    g.create_dataset("y", data=np.random.default_rng(1).standard_normal(n).astype("f4"))
    try:
        os.rename(tmp, path)
    except OSError:  # another run wrote it first
        pass
    return path


class ZarrFrames(Dataset):
    """One frame per item, read from zarr (each read decompresses whole
    default chunks); the store opens lazily in each worker."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.g: Any = None

    def __len__(self) -> int:
        return 2000

    def __getitem__(self, i: int) -> Any:
        if self.g is None:
            import numcodecs.blosc
            import zarr

            numcodecs.blosc.use_threads = False  # one core per worker
            self.g = zarr.open_group(self.path, mode="r")
        x = torch.from_numpy(self.g["x"][i].astype("f4") / 255.0)
        return x, torch.tensor([self.g["y"][i]])


class Busy(Dataset):
    """Synthetic items costing CPU work each: rounds of elementwise numpy
    math on `size` floats (single-threaded); `dim` features, a target."""

    def __init__(self, n: int, dim: int, rounds: int, size: int = 4096, seed: int = 0) -> None:
        g = torch.Generator().manual_seed(seed)
        self.x = torch.randn(n, dim, generator=g)
        self.y = torch.randn(n, 1, generator=g)
        self.rounds, self.size = rounds, size

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, i: int) -> Any:
        a = np.full(self.size, 0.5 + i % 7 * 0.01)
        for _ in range(self.rounds):
            a = np.sin(a) * 1.0001 + 0.01
        return self.x[i] + float(a[0]) * 1e-6, self.y[i]


class SlowItems(Dataset):
    """Items that each wait 0.55 s (a remote read, the GIL released); the
    network control, which measures no loader, sets wait to 0."""

    def __init__(self, n: int, dim: int) -> None:
        self.n, self.dim, self.wait = n, dim, 0.55

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> Any:
        time.sleep(self.wait)
        g = torch.Generator().manual_seed(i)
        return torch.randn(self.dim, generator=g), torch.randn(1, generator=g)


class Stream(IterableDataset):
    """An IterableDataset without __len__: `n` items an epoch, split
    between the workers."""

    def __init__(self, n: int, dim: int) -> None:
        self.n, self.dim = n, dim

    def __iter__(self) -> Iterator[Any]:
        info = torch.utils.data.get_worker_info()
        who, many = (info.id, info.num_workers) if info is not None else (0, 1)
        g = torch.Generator().manual_seed(who)
        for _ in range(who, self.n, many):
            x = torch.randn(self.dim, generator=g)
            yield x, x[:1] * 0.5


@dataclasses.dataclass
class Batch:
    """A batch as a dataclass (the dict case's --batch-type dataclass)."""

    x: torch.Tensor
    y: torch.Tensor


def collate_dict(items: List[Any]) -> Any:
    """Items (x, y) into {"x": ..., "y": ...}."""
    return {"x": torch.stack([i[0] for i in items]), "y": torch.stack([i[1] for i in items])}


def collate_dataclass(items: List[Any]) -> Batch:
    """Items (x, y) into a Batch."""
    return Batch(torch.stack([i[0] for i in items]), torch.stack([i[1] for i in items]))


def upload(batch: Any) -> Any:
    """The batch on DEVICE as (x, y), whatever its type."""
    if isinstance(batch, dict):
        return batch["x"].to(DEVICE), batch["y"].to(DEVICE)
    if isinstance(batch, Batch):
        return batch.x.to(DEVICE), batch.y.to(DEVICE)
    return batch[0].to(DEVICE), batch[1].to(DEVICE)


# ---------------------------------------------------------------------------
# Models


def mlp(dim: int, width: int, depth: int) -> nn.Module:
    """depth hidden layers of width, one output."""
    layers: List[nn.Module] = []
    for i in range(depth):
        layers += [nn.Linear(dim if i == 0 else width, width), nn.ReLU()]
    return nn.Sequential(*layers, nn.Linear(width, 1))


class Frozen(nn.Module):
    """A small frozen conv encoder and a trained MLP head."""

    def __init__(self) -> None:
        super().__init__()
        self.enc = nn.Sequential(nn.Conv2d(3, 16, 3, stride=2, padding=1), nn.ReLU(),
                                 nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(2), nn.Flatten())
        for p in self.enc.parameters():
            p.requires_grad_(False)
        self.head = mlp(128, 64, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.enc(x))


class Tiny(nn.Module):
    """Many tiny ops: bound by the training thread's per-op overhead."""

    def __init__(self, dim: int, depth: int) -> None:
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(dim, dim) for _ in range(depth))
        self.out = nn.Linear(dim, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = x + torch.tanh(layer(x)) * 0.1
        return self.out(x)


# ---------------------------------------------------------------------------
# Cases


@dataclasses.dataclass
class Setup:
    """One case: its loaders, model and optimizer."""

    train: Any
    model: nn.Module
    opt: torch.optim.Optimizer
    val: Any = None
    check: Optional[Callable[[int], None]] = None  # after each step (the crash case)
    threads: int = 1
    # Ranks of one run: the step count all ranks of a control agree on
    # (the smallest proposed), and what they do before exiting together.
    agree: Optional[Callable[[int], int]] = None
    done: Optional[Callable[[], None]] = None
    fixed: int = 0  # batches the network/forward controls hold (0: CACHED)
    files: Optional[str] = None  # the directory of the case's data files, for --control cold


def _loader(ds: Any, batch: int, workers: int, **kw: Any) -> DataLoader:
    return DataLoader(ds, batch_size=batch, num_workers=workers, shuffle=not isinstance(ds, IterableDataset),
                      drop_last=True, persistent_workers=workers > 0, **kw)


def _sgd(model: nn.Module) -> torch.optim.Optimizer:
    return torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.01, momentum=0.9)


def case_input(a: Any) -> Setup:
    """The loader (zarr, default chunks) is the bottleneck."""
    model = Frozen()
    path = zarr_data(a.data)
    return Setup(_loader(ZarrFrames(path), 8, 2), model, _sgd(model), files=path)


def case_compute(a: Any) -> Setup:
    """The network is the bottleneck: each batch is one indexing of
    in-memory tensors (a BatchSampler's indices), a few % of the step."""
    ds = TensorDataset(torch.randn(4096, 256), torch.randn(4096, 1))
    model = mlp(256, 768, 3)
    batches = BatchSampler(RandomSampler(ds), batch_size=32, drop_last=True)
    return Setup(DataLoader(ds, sampler=batches, batch_size=None), model, _sgd(model))


def case_contention(a: Any) -> Setup:
    """Loader workers and intra-op threads fight for the 2 cores."""
    model = mlp(256, 768, 2)
    return Setup(_loader(Busy(4096, 256, rounds=120), 32, 2), model, _sgd(model), threads=2)


def case_seed(a: Any) -> Setup:
    """Data in the training thread ~half the step (cached batches ~2x
    faster), a many-tiny-ops network."""
    model = Tiny(32, 64)
    return Setup(_loader(Busy(4096, 32, rounds=12), 32, 0), model, _sgd(model))


def case_trainval(a: Any) -> Setup:
    """A training and a validation loader."""
    model = mlp(64, 256, 2)
    train = _loader(Busy(1024, 64, rounds=30), 32, 2)
    val = DataLoader(Busy(256, 64, rounds=30, seed=1), batch_size=64, num_workers=1)
    return Setup(train, model, _sgd(model), val=val)


def case_dict(a: Any) -> Setup:
    """Batches are dicts (or a dataclass with --batch-type dataclass)."""
    collate = collate_dataclass if a.batch_type == "dataclass" else collate_dict
    model = mlp(64, 256, 2)
    return Setup(_loader(Busy(2048, 64, rounds=30), 32, 2, collate_fn=collate), model, _sgd(model))


def case_iterable(a: Any) -> Setup:
    """An IterableDataset without __len__."""
    model = mlp(64, 256, 2)
    return Setup(_loader(Stream(2048, 64), 32, 2), model, _sgd(model))


def case_crash(a: Any) -> Setup:
    """A script-side check that fails when the optimizer never steps."""
    model = mlp(64, 512, 2)
    start = [p.detach().clone() for p in model.parameters()]

    def check(step: int) -> None:
        if step == 20:
            changed = any(not torch.equal(s, p) for s, p in zip(start, model.parameters()))
            assert changed, "parameters unchanged after 20 steps"

    ds = TensorDataset(torch.randn(2048, 64), torch.randn(2048, 1))
    return Setup(_loader(ds, 32, 0), model, _sgd(model), check=check)


def case_ddp(a: Any) -> Setup:
    """2 Gloo ranks; rank 1's data is slower per item."""
    import torch.distributed as dist
    from torch.utils.data.distributed import DistributedSampler

    dist.init_process_group("gloo")
    rank = dist.get_rank()
    ds = Busy(2048, 64, rounds=20 if rank == 0 else 60)
    train = DataLoader(ds, batch_size=16, sampler=DistributedSampler(ds), num_workers=1, drop_last=True, persistent_workers=True)
    model = nn.parallel.DistributedDataParallel(mlp(64, 256, 2))

    def agree(n: int) -> int:
        t = torch.tensor([n])
        dist.all_reduce(t, op=dist.ReduceOp.MIN)
        return int(t.item())

    return Setup(train, model, _sgd(model), agree=agree, done=dist.barrier)


class Convs(nn.Module):
    """Three 112-channel convolutions over each sample seen as 2x16x16:
    compute-bound (few parameters, an optimizer step of nothing)."""

    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(2, 112, 3, padding=1), nn.ReLU(), nn.Conv2d(112, 112, 3, padding=1), nn.ReLU(),
                                  nn.Conv2d(112, 112, 3, padding=1), nn.ReLU())
        self.out = nn.Linear(112, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.body(x.view(-1, 2, 16, 16)).mean((2, 3)))


def case_slow(a: Any) -> Setup:
    """A loader slower than one batch every 4 s, a ~20-40 ms network."""
    model = Convs()
    return Setup(_loader(SlowItems(256, 512), 8, 1), model, _sgd(model), fixed=1)


CASES = {n[5:]: f for n, f in globals().items() if n.startswith("case_")}


# ---------------------------------------------------------------------------
# Loops


def step_once(s: Setup, batch: Any, backward: bool = True) -> None:
    """Upload, forward, and (backward) backward and optimizer step."""
    x, y = upload(batch)
    loss = nn.functional.mse_loss(s.model(x), y)
    if backward:
        s.opt.zero_grad()
        loss.backward()
        s.opt.step()


def validate(s: Setup) -> None:
    """One pass over the validation loader, gradients off."""
    with torch.no_grad():
        for batch in s.val:
            x, y = upload(batch)
            nn.functional.mse_loss(s.model(x), y).item()


def epochs(s: Setup) -> Iterator[Any]:
    """The training batches, epoch after epoch (validation between)."""
    epoch = 0
    while True:
        sampler = getattr(s.train, "sampler", None)
        if hasattr(sampler, "set_epoch"):
            sampler.set_epoch(epoch)
        for batch in s.train:
            yield batch
        if s.val is not None:
            validate(s)
        epoch += 1


def train(s: Setup, steps: int) -> None:
    """The script's normal loop: steps optimizer steps (0: until stopped)."""
    n = 0
    for batch in epochs(s):
        step_once(s, batch)
        n += 1
        if s.check is not None:
            s.check(n)
        if steps and n >= steps:
            return


def batch_len(batch: Any) -> int:
    """Samples in a batch."""
    return len(upload(batch)[0])


def timed(work: Iterator[int], seconds: float) -> Any:
    """Run work (each item: the samples of one step) for WARMUP_S, then
    measure it for seconds: (samples/s, steps, seconds)."""
    t_end = time.perf_counter() + WARMUP_S
    for _ in work:
        if time.perf_counter() >= t_end:
            break
    samples = steps = 0
    t0 = time.perf_counter()
    for n in work:
        samples += n
        steps += 1
        if time.perf_counter() - t0 >= seconds:
            break
    dt = time.perf_counter() - t0
    return samples / dt, steps, dt


def timed_ranks(work: Iterator[int], seconds: float, agree: Callable[[int], int]) -> Any:
    """timed for the ranks of one run, whose steps may wait for each other:
    2 x WARMUP_STEPS steps, then the same number of steps on every rank
    (about seconds at the slowest rank's rate over the second half)."""
    for _ in itertools.islice(work, WARMUP_STEPS):
        pass
    t = time.perf_counter()
    for _ in itertools.islice(work, WARMUP_STEPS):
        pass
    steps = agree(max(1, int(WARMUP_STEPS / (time.perf_counter() - t) * seconds)))
    t0 = time.perf_counter()
    samples = sum(itertools.islice(work, steps))
    dt = time.perf_counter() - t0
    return samples / dt, steps, dt


def control(s: Setup, mode: str) -> Iterator[int]:
    """The steps a control measures, as a stream of sample counts."""
    if mode in ("loader", "cold"):
        if mode == "cold" and s.files:
            evict(s.files)
        for batch in epochs(Setup(s.train, s.model, s.opt)):
            yield batch_len(batch)
    elif mode == "full":
        for batch in epochs(s):
            step_once(s, batch)
            yield batch_len(batch)
    else:
        if isinstance(s.train.dataset, SlowItems):
            s.train.dataset.wait = 0.0  # the same batch, without the wait
        it = iter(s.train)
        cached = [next(it) for _ in range(s.fixed or CACHED)]
        del it
        while True:
            for batch in cached:
                step_once(s, batch, backward=mode == "network")
                yield batch_len(batch)


def evict(root: str) -> None:
    """Drop every file under root from the page cache."""
    for d, _, names in os.walk(root):
        for n in names:
            fd = os.open(os.path.join(d, n), os.O_RDONLY)
            try:
                os.fdatasync(fd)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


def main(argv: Optional[List[str]] = None) -> None:
    """Parse the arguments; train, or run a control."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--case", required=True, choices=sorted(CASES))
    p.add_argument("--steps", type=int, default=0, help="optimizer steps (default: until stopped)")
    p.add_argument("--control", choices=("loader", "cold", "network", "forward", "full"))
    p.add_argument("--seconds", type=float, default=5.0, help="how long a control measures")
    p.add_argument("--data", help="directory of the input case's zarr store (default: a temp dir)")
    p.add_argument("--batch-type", choices=("dict", "dataclass"), default="dict", help="the dict case's batches")
    a = p.parse_args(argv)
    torch.manual_seed(0)
    # Replaying a few batches drives gradients towards zero: denormal floats
    # would make the cached loops slower than the real one.
    torch.set_flush_denormal(True)
    s = CASES[a.case](a)
    torch.set_num_threads(s.threads)
    if a.control is None:
        train(s, a.steps)
        return
    if s.agree is None:
        rate, steps, dt = timed(control(s, a.control), a.seconds)
    else:
        rate, steps, dt = timed_ranks(control(s, a.control), a.seconds, s.agree)
    out = {"control": a.control, "samples_per_sec": round(rate, 2), "steps": steps, "seconds": round(dt, 3)}
    if "RANK" in os.environ and s.agree is not None:
        out["rank"] = int(os.environ["RANK"])
    sys.stdout.write(json.dumps(out) + "\n")  # one write: ranks sharing stdout never interleave
    sys.stdout.flush()
    if s.done is not None:
        s.done()
    sys.exit(0)


if __name__ == "__main__":
    main()
