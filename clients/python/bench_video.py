#!/usr/bin/env python3
"""The cost of counting video decoding, per one-frame read, side by side.

Reads one frame at a time from a 96x96 H.264 file with a keyframe on every
frame (GOP 1: a read decodes the one frame it returns, the cheapest read,
so the counting's share is the largest), in one process, alternating
blocks of reads with the video counting in and out, and prints the median
time per read of both and the overhead. Two kinds of read:

* ``open``: what a Dataset that opens the file per sample does: av.open,
  seek, decode up to the frame, to_ndarray, close;
* ``kept open``: the container opened once, then seek, decode, to_ndarray.

The counted blocks count as ``pipetop run`` does: the per-read wrappers
are put in and out in shares of the time (``readshare``), so each counted
block runs --seconds and is timed after its first --settle seconds (the
first period counts everything; the share is then set from the cost).
Each block's time per read is its reads' total CPU time (the reading
thread's) over their count.

Then each wrapper's own cost when counting: the wrapper around a no-op
that returns what PyAV would (a real stream, packet, frame and array),
less the no-op called directly, the fastest of 7 repeats of 100,000
calls. Beside a real read the wrappers cost several times that (cache
misses after the decode): that is why the reads are counted in shares.

The design target is at most 2 % of a one-frame read.

Run: /usr/bin/python3 clients/python/bench_video.py [--pairs N] [--seconds S] [--settle S]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import timeit
from typing import Any, Callable, Dict, List, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import av  # noqa: E402

from pipetop_publish import readshare, videowatch  # noqa: E402
from pipetop_publish.auto import _Patches  # noqa: E402

FRAMES = 300


def encode(path: str) -> None:
    """Write the GOP-1 test video."""
    subprocess.run(["ffmpeg", "-loglevel", "error", "-y", "-f", "lavfi", "-i", "testsrc=size=96x96:rate=30",
                    "-frames:v", str(FRAMES), "-c:v", "libx264", "-pix_fmt", "yuv420p", "-g", "1", path], check=True)


def frame_of(c: Any, ticks: float, t: int) -> Any:
    """Seek c to frame t, decode up to it and return it as RGB."""
    s = c.streams.video[0]
    pts = round(t * ticks)
    c.seek(pts, stream=s)
    for f in c.decode(s):
        if f.pts >= pts:
            return f.to_ndarray(format="rgb24")
    raise RuntimeError("frame %d not found" % t)


def block(read: Callable[[int], Any], seconds: float, settle: float, rng: random.Random) -> float:
    """Mean thread CPU ns of one read over the reads made from settle
    seconds into a block of seconds (CPU time: the box's other work moves
    it less than wall time)."""
    t_end = time.perf_counter_ns() + int(seconds * 1e9)
    t_settled = t_end - int((seconds - settle) * 1e9)
    n = took = 0
    while True:
        t = rng.randrange(FRAMES)
        t0, c0 = time.perf_counter_ns(), time.thread_time_ns()
        read(t)
        c1 = time.thread_time_ns()
        if t0 >= t_settled:
            n, took = n + 1, took + c1 - c0
        if t0 >= t_end:
            return took / max(1, n)


def wrapper_costs(path: str) -> Dict[str, float]:
    """Ns each wrapper adds to a call of a no-op returning what PyAV would."""
    c = av.open(path)
    s = c.streams.video[0]
    packet, frames = None, []
    for p in c.demux(s):
        frames = s.decode(p)
        if frames:
            packet = p
            break
    arr = frames[0].to_ndarray(format="rgb24")
    noops: Dict[str, Tuple[Callable[..., Any], Callable[[], Tuple[Any, ...]]]] = {
        "open": (lambda file, mode=None: c, lambda: (path,)),
        "seek": (lambda self, *a, **k: None, lambda: (c, 0)),
        "demux": (lambda self, *a, **k: iter(()), lambda: (c, s)),
        "decode": (lambda self, packet=None: frames, lambda: (s, packet)),
        "convert": (lambda self, *a, **k: arr, lambda: (frames[0],)),
    }
    wraps = {"open": videowatch._open_wrapper, "seek": videowatch._seek_wrapper, "demux": videowatch._demux_wrapper,
             "decode": videowatch._decode_wrapper, "convert": videowatch._convert_wrapper}
    out = {}
    for name, (noop, args) in noops.items():
        wrapped, a = wraps[name](noop), args()
        n = 100_000
        counted = min(timeit.repeat(lambda: wrapped(*a), number=n, repeat=7)) / n
        plain = min(timeit.repeat(lambda: noop(*a), number=n, repeat=7)) / n
        out[name] = (counted - plain) * 1e9
    videowatch.registry.forget()
    c.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pairs", type=int, default=10, help="pairs of blocks (counted, plain), alternating")
    ap.add_argument("--seconds", type=float, default=4.0, help="seconds of each block")
    ap.add_argument("--settle", type=float, default=1.0, help="seconds of a block before it is timed")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "gop1.mp4")
        encode(path)
        with av.open(path) as c:
            s = c.streams.video[0]
            ticks = float(1 / (s.average_rate * s.time_base))
        kept = av.open(path)

        def opened(t: int) -> Any:
            with av.open(path) as c:
                return frame_of(c, ticks, t)

        reads: Dict[str, Callable[[int], Any]] = {"open": opened, "kept open": lambda t: frame_of(kept, ticks, t)}
        rng = random.Random(1)
        got: Dict[str, Dict[bool, List[float]]] = {k: {True: [], False: []} for k in reads}
        shares: List[float] = []
        for i in range(2 * args.pairs):
            counted = (i % 2 == 0) != ((i // 2) % 2 == 1)  # each side first in every other pair
            for name, read in reads.items():
                switch = None
                if counted:
                    patches = _Patches()
                    if not videowatch.patch(av, patches):
                        sys.exit("PyAV %s is not counted" % av.__version__)
                    switch = readshare.Switch()
                    switch.register(videowatch.share_format())
                got[name][counted].append(block(read, args.seconds, args.settle, rng))
                if switch is not None:
                    switch.stop()
                    shares.append(switch.share)
                    videowatch.type_patches.undo()
                    patches.undo()
                    videowatch.registry.forget()
        kept.close()
        costs = wrapper_costs(path)
    print("PyAV %s, Python %s, %d pairs of %.0f s blocks of one-frame reads (96x96 H.264, GOP 1), timed after %.0f s"
          % (av.__version__, sys.version.split()[0], args.pairs, args.seconds, args.settle))
    print("%-10s %14s %14s %10s %10s %8s" % ("read", "plain us/read", "counted", "cost us", "overhead", "share"))
    for j, (name, g) in enumerate(got.items()):
        plain, counted = statistics.median(g[False]), statistics.median(g[True])
        share = statistics.median(shares[j::len(reads)])
        print("%-10s %14.1f %14.1f %10.1f %9.2f %% %7.0f%%" % (name, plain / 1e3, counted / 1e3, (counted - plain) / 1e3,
                                                            100 * (counted - plain) / plain, 100 * share))
    print("each wrapper's own cost per call (ns): " + ", ".join("%s %.0f" % kv for kv in costs.items()))
    kept_ns = sum(v for k, v in costs.items() if k != "open")
    for name, g in got.items():
        plain = statistics.median(g[False])
        own = kept_ns + (costs["open"] if name == "open" else 0)
        print("%-10s the wrappers' own cost: %.2f us a read, %.2f %% of the plain read" % (name, own / 1e3, 100 * own / plain))


if __name__ == "__main__":
    main()
