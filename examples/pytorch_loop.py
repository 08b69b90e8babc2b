#!/usr/bin/env python3
"""Train a small PyTorch MLP on synthetic data and publish it to pipetop.

The loop times the canonical stages (data_wait, h2d, forward, backward,
optim, sync) with pipetop_publish; run ``pipetop`` in another terminal to
watch it. It prints the final loss when done.

    python3 examples/pytorch_loop.py --steps 500
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
from typing import Any, Dict, Iterator, List, Tuple

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "clients", "python"))
from pipetop_publish import Publisher  # noqa: E402


class Regression(Dataset):
    """Samples x ~ N(0, 1) with a fixed nonlinear target, generated per index
    so that every worker produces the same sample for the same index."""

    def __init__(self, size: int, features: int, work: int) -> None:
        self.size = size
        self.features = features
        self.work = work
        g = torch.Generator().manual_seed(0)
        self.w = torch.randn(features, 1, generator=g) / features**0.5

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, i: int) -> Tuple[torch.Tensor, torch.Tensor]:
        g = torch.Generator().manual_seed(i)
        x = torch.randn(self.features, generator=g)
        for _ in range(self.work):  # stand-in for decoding and augmentation
            x = x + 0.0 * torch.tanh(x)
        y = torch.tanh(x @ self.w) + 0.01 * torch.randn(1, generator=g)
        return x, y


def parse_args(argv: Any = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=300, help="training steps to run")
    p.add_argument("--seconds", type=float, default=0, help="also stop after this many seconds of training (0: no limit)")
    p.add_argument("--batch", type=int, default=64, help="samples per step")
    p.add_argument("--workers", type=int, default=2, help="DataLoader worker processes")
    p.add_argument("--features", type=int, default=64, help="input features")
    p.add_argument("--hidden", type=int, default=256, help="hidden units")
    p.add_argument("--work", type=int, default=0, help="simulated per-sample decode cost (tensor ops per sample)")
    p.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    p.add_argument("--device", default="cpu", help="torch device, e.g. cpu or cuda")
    p.add_argument("--name", default="pytorch-loop", help="trainer name shown by pipetop")
    p.add_argument("--cuda-timing", action="store_true", help="also time stages with CUDA events")
    p.add_argument("--no-publish", action="store_true", help="do not publish (for comparisons)")
    p.add_argument("--wait-viewers", type=int, default=0, metavar="N",
                   help="wait (up to 60 s) until N viewers are attached before training")
    p.add_argument("--stats", action="store_true", help="print timing and publisher counters as JSON")
    args = p.parse_args(argv)
    if args.steps < 1 or args.batch < 1 or args.workers < 0:
        p.error("--steps and --batch must be >= 1 and --workers >= 0")
    if args.no_publish and args.wait_viewers:
        p.error("--wait-viewers needs publishing; drop --no-publish")
    return args


class NoPublisher:
    """Stands in for Publisher when publishing is off, so the loop is the same."""

    class _Null:
        def __enter__(self) -> None:
            return None

        def __exit__(self, *exc: Any) -> None:
            return None

    _null = _Null()

    def stage(self, name: str) -> "_Null":
        return self._null

    def step(self, samples: int = 0, loss: Any = None) -> None:
        pass

    def event(self, kind: str, msg: str = "") -> None:
        pass

    def stats(self) -> Dict[str, int]:
        return {}

    def close(self) -> None:
        pass


class StageClock:
    """Times each stage on its own as well (outside the publisher's span),
    so that ``--stats`` can report means a test compares with what pipetop
    receives."""

    def __init__(self, pub: Any) -> None:
        self.pub = pub
        self.total: Dict[str, int] = {}
        self.walls: List[int] = []

    @contextlib.contextmanager
    def stage(self, name: str) -> Iterator[None]:
        t = time.perf_counter_ns()
        with self.pub.stage(name):
            yield
        self.total[name] = self.total.get(name, 0) + time.perf_counter_ns() - t

    def means_ns(self, steps: int) -> Dict[str, float]:
        return {k: v / steps for k, v in self.total.items()}


def batches(loader: DataLoader):
    """Yield batches forever, epoch after epoch."""
    while True:
        yield from loader


def wait_for_viewers(pub: Any, n: int, timeout: float) -> None:
    """Block until n viewers are attached, or exit with an error after timeout."""
    deadline = time.monotonic() + timeout
    while n > 0 and pub.stats().get("viewers", 0) < n:
        if time.monotonic() > deadline:
            sys.exit("pytorch_loop: %d viewer(s) did not attach within %.0f s" % (n, timeout))
        time.sleep(0.01)


def train(args: argparse.Namespace) -> Dict[str, Any]:
    torch.manual_seed(0)
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    data = Regression(size=1 << 20, features=args.features, work=args.work)
    loader = DataLoader(data, batch_size=args.batch, shuffle=True, num_workers=args.workers,
                        persistent_workers=args.workers > 0, drop_last=True)
    model = nn.Sequential(
        nn.Linear(args.features, args.hidden), nn.ReLU(),
        nn.Linear(args.hidden, args.hidden), nn.ReLU(),
        nn.Linear(args.hidden, 1),
    ).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    config = {"model": "mlp", "features": args.features, "hidden": args.hidden, "batch": args.batch,
              "workers": args.workers, "device": str(device), "optimizer": "AdamW"}
    pub = NoPublisher() if args.no_publish else Publisher(name=args.name, config=config, cuda=args.cuda_timing)
    wait_for_viewers(pub, args.wait_viewers, 60.0)
    clock = StageClock(pub)
    it = batches(loader)
    loss_value = float("nan")
    walls: List[float] = []
    deadline = time.monotonic() + args.seconds if args.seconds > 0 else float("inf")
    try:
        for step in range(args.steps):
            if time.monotonic() >= deadline:
                break
            t = time.perf_counter()
            with clock.stage("data_wait"):
                x, y = next(it)
            with clock.stage("h2d"):
                x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
            with clock.stage("forward"):
                loss = nn.functional.mse_loss(model(x), y)
            with clock.stage("backward"):
                loss.backward()
            with clock.stage("optim"):
                opt.step()
                opt.zero_grad(set_to_none=True)
            with clock.stage("sync"):
                if step % 10 == 0 or step == args.steps - 1 or time.monotonic() >= deadline:
                    loss_value = loss.item()
            pub.step(samples=len(x), loss=loss.detach())
            walls.append(time.perf_counter() - t)
            if step == 0:
                pub.event("phase", "first step done")
    finally:
        stats = pub.stats()
        pub.close()
    steady = sorted(walls[len(walls) // 5:]) or walls
    return {"final_loss": loss_value, "steps": len(walls),
            "step_mean_ms": 1e3 * sum(steady) / len(steady),
            "step_p50_ms": 1e3 * steady[len(steady) // 2],
            "stage_mean_ns": clock.means_ns(max(1, len(walls))), "publisher": stats}


def main() -> None:
    args = parse_args()
    try:
        result = train(args)
    except KeyboardInterrupt:
        sys.exit(130)
    print("final loss %.6f" % result["final_loss"], flush=True)
    if args.stats:
        print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
