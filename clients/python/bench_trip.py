#!/usr/bin/env python3
"""Cost of counting the batch's trip from DataLoader workers (trip.py), side
by side with and without it, in one process.

A DataLoader with 2 workers delivers batches of 4 cameras of 128x128x3
images and a joint vector (batch 32): float32 (24 MiB a batch) and uint8
(6 MiB). The loop sleeps --gap-ms before each batch, so the next one is
always waiting in the result queue: the time of ``next(it)`` is then the
main process's time to receive a batch (and the DataLoader's bookkeeping),
not waiting for a worker. Epochs alternate between a watched iterator and
a plain one, --rounds pairs; each side's median ``next`` time is printed,
with the difference.

A second column times ``Trip.count`` alone on the same batches (after the
first CHECKS, whose values are sampled): the counting's own cost per batch,
free of the workers' noise, over the receive time the watched side
measured (the median of its batches after the first). The first
batches' cost (with the uint8 value check) is printed apart. Target: at most 2 % of a batch's receive time.

Run: /usr/bin/python3 clients/python/bench_trip.py [--rounds N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch.utils.data import DataLoader, Dataset  # noqa: E402

from pipetop_publish import trip  # noqa: E402


class Cameras(Dataset):
    def __init__(self, as_float: bool, n: int) -> None:
        g = torch.Generator().manual_seed(0)
        self.frames = torch.randint(0, 256, (16, 4, 128, 128, 3), dtype=torch.uint8, generator=g)
        self.joints = torch.randn(16, 14, generator=g)
        self.as_float, self.n = as_float, n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> dict:
        f = self.frames[i % 16]
        out = {"cam%d" % c: f[c].float() if self.as_float else f[c] for c in range(4)}
        out["joints"] = self.joints[i % 16]
        return out


def epoch(dl: DataLoader, t: "trip.Trip | None", gap: float):
    """next() times and (watched) receive times of one epoch's batches
    (its first batch, received while the workers still work, left out),
    and its batches; watched into t (one per DataLoader, as in a run: its
    values are checked in its first batches only) unless t is None."""
    it = iter(dl)
    watched = t is not None
    if t is not None:
        trip.watch(it, t)
    else:
        t = trip.Trip()
    times, recv, batches = [], [], []
    first = True
    while True:
        time.sleep(gap)
        r0 = t.receive_ns
        t0 = time.perf_counter_ns()
        try:
            b = next(it)
        except StopIteration:
            break
        dt = time.perf_counter_ns() - t0
        if not first:
            times.append(dt)
            if watched:
                recv.append(t.receive_ns - r0)
        first = False
        batches.append(b)
    return times, recv, batches


def count_cost(batches, reps: int):
    """Median ns of Trip.count per batch after its first CHECKS batches,
    and the mean of those first ones."""
    t = trip.Trip()
    first = []
    for i, b in enumerate(batches[:trip.CHECKS]):
        t0 = time.perf_counter_ns()
        t.count((i, b), 1)
        first.append(time.perf_counter_ns() - t0)
    steady = []
    for _ in range(reps):
        for i, b in enumerate(batches[trip.CHECKS:]):
            t0 = time.perf_counter_ns()
            t.count((i, b), 1)
            steady.append(time.perf_counter_ns() - t0)
    return statistics.median(steady), statistics.mean(first)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--batches", type=int, default=8)
    ap.add_argument("--gap-ms", type=float, default=250)
    args = ap.parse_args()
    torch.set_num_threads(1)
    print("%-8s %12s %12s %10s | %12s %12s %9s %14s" % ("images", "plain next", "watched", "diff", "receive", "count", "count %", "first 3 count"))
    for as_float in (True, False):
        dl = DataLoader(Cameras(as_float, 32 * args.batches), batch_size=32, num_workers=2, prefetch_factor=2)
        plain, watched, recv = [], [], []
        batches = []
        run = trip.Trip()
        for _ in range(args.rounds):
            for w in (False, True):
                times, r, b = epoch(dl, run if w else None, args.gap_ms / 1e3)
                (watched if w else plain).extend(times)
                recv.extend(r)
                if w:
                    batches = b
        p, w = statistics.median(plain), statistics.median(watched)
        r = statistics.median(recv)
        c, first = count_cost(batches, 20)
        print("%-8s %9.3f ms %9.3f ms %7.3f ms | %9.3f ms %9.1f us %8.2f %% %11.1f us" % (
            "float32" if as_float else "uint8", p / 1e6, w / 1e6, (w - p) / 1e6, r / 1e6, c / 1e3, 100 * c / r if r else 0, first / 1e3))


if __name__ == "__main__":
    main()
