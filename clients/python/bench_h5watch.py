#!/usr/bin/env python3
"""Cost of counting h5py reads (h5watch), side by side in one process.

Writes a small HDF5 file with h5py (84x84x3 uint8 frames) and times
one-frame reads of it in blocks, alternating blocks with the counting
applied and removed (the order swapped every pair, so drift and the box's
other work fall on both sides alike). The counted blocks count as
``pipetop run`` does: the per-read wrapper is put in and out in shares of
the time (``readshare``), so each block runs --seconds and is timed after
its first --settle seconds (the first period counts everything; the share
is then set from the cost). Prints, per case, the median over the blocks
of each side's time per read (wall and this thread's CPU time), the cost
of counting per read, that cost over the plain read, and the share of the
time counted. The target is at most 2 % of a one-frame read on 1-frame
chunks (the first case: the layout pipetop's advice leads to).

Cases: 1-frame gzip chunks of smooth frames (they inflate fastest: the
worst case for the share) through a Dataset the loop keeps; the same with
camera-like noise (+-8 levels); the smooth ones opening the dataset by name
for each read (f[name][i]: a new handle, identified by two HDF5 name
lookups, on every read); one-frame reads of 60-frame lzf chunks
(amplified, the chunk decoded on every read). The files are opened with
the counting applied, as pipetop run's instrumentation opens them (a file
opened before it makes each new handle read its dataset's access property
list as well).

Run: /usr/bin/python3 clients/python/bench_h5watch.py [--pairs N] [--seconds S] [--settle S]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from typing import Callable, Dict, List, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import h5py  # noqa: E402
import numpy as np  # noqa: E402

from pipetop_publish import h5watch, readshare  # noqa: E402
from pipetop_publish.auto import _Patches  # noqa: E402

FRAMES, SIDE = 300, 84


def write(path: str, chunk: int, compression: str, noise: int = 0) -> None:
    """FRAMES smooth frames (plus uniform noise of +-noise levels, as a
    camera's), chunk frames per chunk."""
    yy, xx = np.mgrid[0:SIDE, 0:SIDE].astype(np.float32)
    t = np.arange(FRAMES, dtype=np.float32)[:, None, None]
    img = np.stack([np.sin(xx / 5 + t / 9 + c) * 100 + 120 for c in range(3)], axis=-1)
    if noise:
        img += np.random.default_rng(1).integers(-noise, noise + 1, img.shape)
    img = img.clip(0, 255).astype(np.uint8)
    with h5py.File(path, "w") as f:
        f.create_dataset("obs/image", data=img, chunks=(chunk, SIDE, SIDE, 3), compression=compression)


def block(read: Callable[[int], object], seconds: float, settle: float, rng: np.random.Generator) -> Tuple[float, float]:
    """Wall and thread-CPU microseconds per read of random frames, over the
    reads made from settle seconds into a block of seconds."""
    runs = [rng.integers(0, FRAMES, 64).tolist() for _ in range(64)]  # 64 reads between clock reads
    t_end = time.perf_counter() + seconds
    t_settled = t_end - (seconds - settle)
    k = 0
    while time.perf_counter() < t_settled:
        for i in runs[k % 64]:
            read(i)
        k += 1
    n, w0, c0 = 0, time.perf_counter(), time.thread_time()
    while True:
        for i in runs[k % 64]:
            read(i)
        k, n = k + 1, n + 64
        w = time.perf_counter()
        if w >= t_end:
            return (w - w0) / n * 1e6, (time.thread_time() - c0) / n * 1e6


def case(read: Callable[[int], object], pairs: int, seconds: float, settle: float) -> Dict[str, List[float]]:
    rng = np.random.default_rng(0)
    got: Dict[str, List[float]] = {"plain_wall": [], "plain_cpu": [], "counted_wall": [], "counted_cpu": [], "share": []}
    block(read, 0.2, 0, rng)  # warm the page cache and h5py
    for p in range(pairs):
        for counted in ((False, True) if p % 2 == 0 else (True, False)):
            switch = None
            if counted:
                patches = _Patches()
                h5watch.patch(h5py, patches)
                switch = readshare.Switch()
                switch.register(h5watch.share_format())
            wall, cpu = block(read, seconds, settle, rng)
            if switch is not None:
                switch.stop()
                got["share"].append(switch.share)
                patches.undo()
                h5watch.registry.take()
            side = "counted" if counted else "plain"
            got[side + "_wall"].append(wall)
            got[side + "_cpu"].append(cpu)
    return got


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=10, help="plain/counted block pairs per case")
    ap.add_argument("--seconds", type=float, default=4.0, help="seconds of each block")
    ap.add_argument("--settle", type=float, default=1.0, help="seconds of a block before it is timed")
    args = ap.parse_args()
    d = tempfile.mkdtemp()
    try:
        frame, camera, traj = (os.path.join(d, n) for n in ("frame.h5", "camera.h5", "traj.h5"))
        write(frame, 1, "gzip")
        write(camera, 1, "gzip", noise=8)
        write(traj, 60, "lzf")
        # The files are opened counted, as under pipetop run (File.__init__
        # notes each file's chunk cache for the datasets' handles).
        patches = _Patches()
        h5watch.patch(h5py, patches)
        f, fc, g = h5py.File(frame, "r"), h5py.File(camera, "r"), h5py.File(traj, "r")
        patches.undo()
        ds, dc, dt = f["obs/image"], fc["obs/image"], g["obs/image"]
        cases = [("1-frame gzip chunks, dset[i]", lambda i: ds[i]),
                 ("same, camera-like noise", lambda i: dc[i]),
                 ("1-frame gzip chunks, f[name][i]", lambda i: f["obs/image"][i]),
                 ("60-frame lzf chunks, dset[i]", lambda i: dt[i])]
        print("%-32s %12s %12s %10s %9s %7s   (medians of %d alternating block pairs; wall, then thread CPU)"
              % ("case", "plain us", "counted us", "cost us", "cost", "share", args.pairs))
        for name, read in cases:
            got = case(read, args.pairs, args.seconds, args.settle)
            for kind in ("wall", "cpu"):
                plain = statistics.median(got["plain_" + kind])
                counted = statistics.median(got["counted_" + kind])
                # The cost: the median of each pair's difference.
                cost = statistics.median(c - p for c, p in zip(got["counted_" + kind], got["plain_" + kind]))
                share = "%6.0f%%" % (100 * statistics.median(got["share"])) if kind == "wall" else ""
                print("%-32s %12.1f %12.1f %10.2f %8.2f %% %7s   %s" % (name if kind == "wall" else "", plain, counted,
                                                                        cost, 100 * cost / plain, share, kind))
        for h in (f, fc, g):
            h.close()
    finally:
        shutil.rmtree(d)


if __name__ == "__main__":
    main()
