#!/usr/bin/env python3
"""Cost of counting h5py reads (h5watch), side by side in one process.

Writes a small HDF5 file with h5py (84x84x3 uint8 frames) and times
one-frame reads of it in blocks, alternating blocks with the counting
patches applied and removed (the order swapped every pair, so drift and
the box's other work fall on both sides alike). Prints, per case, the
median over the blocks of each side's time per read (wall and this
thread's CPU time), the cost of counting per read and that cost over the
plain read. The target is at most 2 % of a one-frame read on 1-frame
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

Run: /usr/bin/python3 clients/python/bench_h5watch.py [--pairs N] [--reads N]
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

from pipetop_publish import h5watch  # noqa: E402
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


def block(read: Callable[[int], object], n: int, rng: np.random.Generator) -> Tuple[float, float]:
    """Wall and thread-CPU microseconds per read over n reads of random frames."""
    idx = rng.integers(0, FRAMES, n).tolist()
    w0, c0 = time.perf_counter(), time.thread_time()
    for i in idx:
        read(i)
    return (time.perf_counter() - w0) / n * 1e6, (time.thread_time() - c0) / n * 1e6


def case(read: Callable[[int], object], pairs: int, n: int) -> Dict[str, List[float]]:
    rng = np.random.default_rng(0)
    got: Dict[str, List[float]] = {"plain_wall": [], "plain_cpu": [], "counted_wall": [], "counted_cpu": []}
    patches = _Patches()
    block(read, n // 4, rng)  # warm the page cache and h5py
    for p in range(pairs):
        for counted in ((False, True) if p % 2 == 0 else (True, False)):
            if counted:
                h5watch.patch(h5py, patches)
            wall, cpu = block(read, n, rng)
            if counted:
                patches.undo()
                h5watch.registry.take()
            side = "counted" if counted else "plain"
            got[side + "_wall"].append(wall)
            got[side + "_cpu"].append(cpu)
    return got


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=15, help="plain/counted block pairs per case")
    ap.add_argument("--reads", type=int, default=1500, help="reads per block")
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
        cases = [("1-frame gzip chunks, dset[i]", lambda i: ds[i], args.reads),
                 ("same, camera-like noise", lambda i: dc[i], args.reads),
                 ("1-frame gzip chunks, f[name][i]", lambda i: f["obs/image"][i], args.reads),
                 ("60-frame lzf chunks, dset[i]", lambda i: dt[i], max(20, args.reads // 30))]
        print("%-32s %12s %12s %10s %9s   (medians of %d alternating block pairs; wall, then thread CPU)"
              % ("case", "plain us", "counted us", "cost us", "cost", args.pairs))
        for name, read, n in cases:
            got = case(read, args.pairs, n)
            for kind in ("wall", "cpu"):
                plain = statistics.median(got["plain_" + kind])
                counted = statistics.median(got["counted_" + kind])
                # The cost: the median of each pair's difference.
                cost = statistics.median(c - p for c, p in zip(got["counted_" + kind], got["plain_" + kind]))
                print("%-32s %12.1f %12.1f %10.2f %8.2f %%   %s" % (name if kind == "wall" else "", plain, counted,
                                                                   cost, 100 * cost / plain, kind))
        for h in (f, fc, g):
            h.close()
    finally:
        shutil.rmtree(d)


if __name__ == "__main__":
    main()
