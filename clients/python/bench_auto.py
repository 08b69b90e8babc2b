#!/usr/bin/env python3
"""Overhead of the automatic instrumentation, side by side in one run.

Runs bench_auto_loop.py plain (`python loop.py`) and instrumented (`python
-m pipetop_publish.auto loop.py`), alternating, several rounds at each step
length, and prints the mean step time of both and the overhead. The design
targets are at most 2 % at 2 ms steps and 0.5 % at 20 ms steps. The bare
loop (0 ms planted) gives the instrumentation's absolute cost per step.
Both wall time and the training thread's CPU time are printed: on a busy
machine the CPU time is the steadier measure of what the patches cost.

A second table times the same loop in ONE process, alternating blocks of
steps with the patches applied and removed (`--blocks` pairs): no process
start, page cache or scheduling differences between the two sides, so the
per-step cost it gives is the precise one; the overhead is that cost over
the plain step time.

Run: /usr/bin/python3 clients/python/bench_auto.py [--rounds N] [--steps N]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from typing import Dict

HERE = os.path.dirname(os.path.abspath(__file__))
LOOP = os.path.join(HERE, "bench_auto_loop.py")


def once(instrumented: bool, step_ms: float, steps: int, env: dict) -> Dict[str, float]:
    """Mean wall and training-thread CPU ms per step of one run."""
    cmd = [sys.executable]
    if instrumented:
        cmd += ["-m", "pipetop_publish.auto"]
    cmd += [LOOP, "--step-ms", str(step_ms), "--steps", str(steps)]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True, timeout=600)
    return json.loads(out.stdout.strip().splitlines()[-1])


def ab_child(step_ms: float, blocks: int, steps: int) -> None:
    """In this process: blocks pairs of steps-step blocks, patched then
    plain (order alternating); prints the per-step thread CPU ms of each."""
    import time

    from pipetop_publish import auto

    import bench_auto_loop as loop
    import torch

    auto.install()
    loader, model, opt = loop.build(step_ms, (2 * blocks + 1) * steps)
    it = iter(loader)

    def patched(on: bool) -> None:
        if on and not auto._patches.done:
            auto._patch_torch(torch)
            auto._patches.set(type(opt), "step", auto._step_wrapper)
        elif not on:
            auto._patches.undo()

    loop.run(it, model, opt, steps)  # warm-up, patched
    on: list = []
    off: list = []
    for b in range(2 * blocks):
        instrumented = (b % 2 == 0) == (b // 2 % 2 == 0)
        patched(instrumented)
        c0 = time.thread_time()
        loop.run(it, model, opt, steps)
        (on if instrumented else off).append((time.thread_time() - c0) / steps * 1e3)
    patched(True)  # as the run ends: the summary is written by the patches' state
    print(json.dumps({"on": on, "off": off}))


def ab(step_ms: float, blocks: int, env: dict) -> Dict[str, float]:
    """Median per-step thread CPU ms with and without the patches, and the
    median of the pairwise differences, from one child process."""
    steps = max(50, int(400 / max(step_ms, 0.5)))
    cmd = [sys.executable, os.path.abspath(__file__), "--ab-child", str(step_ms), str(blocks), str(steps)]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True, timeout=600)
    r = json.loads(out.stdout.strip().splitlines()[-1])
    diffs = sorted(a - b for a, b in zip(r["on"], r["off"]))
    med = lambda v: sorted(v)[len(v) // 2]  # noqa: E731
    return {"on": med(r["on"]), "off": med(r["off"]), "diff": diffs[len(diffs) // 2], "steps": steps}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5, help="plain/instrumented pairs per step length")
    ap.add_argument("--steps", type=int, default=0, help="measured steps per run (default: about 2 s of steps)")
    ap.add_argument("--step-ms", type=float, nargs="*", default=[0.0, 2.0, 20.0])
    ap.add_argument("--blocks", type=int, default=15, help="patched/plain block pairs of the one-process table")
    ap.add_argument("--ab-child", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.ab_child:
        ab_child(float(args.ab_child[0]), int(args.ab_child[1]), int(args.ab_child[2]))
        return
    d = tempfile.mkdtemp(prefix="ptbench", dir="/tmp")
    env = dict(os.environ, PYTHONPATH=HERE, PIPETOP_SOCKET_DIR=d, PIPETOP_SUMMARY="0")
    print("%-6s %-6s | %-36s | %-36s" % ("step", "rounds", "wall ms/step: plain  auto  overhead", "thread CPU ms/step: plain  auto  overhead"))
    for ms in args.step_ms:
        steps = args.steps or max(100, int(2000 / max(ms, 0.5)))
        plain, instr = [], []
        for _ in range(args.rounds):
            plain.append(once(False, ms, steps, env))
            instr.append(once(True, ms, steps, env))
        # The minimum of each side is the run least disturbed by other load.
        row = []
        for key in ("step_ms", "cpu_ms"):
            p, a = min(r[key] for r in plain), min(r[key] for r in instr)
            row.append("%8.4f %8.4f %+7.2f%% (%+.0f us)" % (p, a, 100 * (a - p) / p, 1e3 * (a - p)))
        print("%-6s %-6d | %-36s | %-36s" % ("%g ms" % ms, args.rounds, row[0], row[1]))
    print()
    print("one process, %d patched/plain block pairs: thread CPU ms/step (medians)" % args.blocks)
    print("%-6s %-8s | %9s %9s %9s %9s" % ("step", "steps", "plain", "auto", "cost", "overhead"))
    for ms in args.step_ms:
        r = ab(ms, args.blocks, env)
        print("%-6s %-8d | %9.4f %9.4f %+6.1f us %+8.2f%%" % (
            "%g ms" % ms, r["steps"], r["off"], r["on"], 1e3 * r["diff"], 100 * r["diff"] / r["off"]))
    print("targets: <= 2 %% at 2 ms steps, <= 0.5 %% at 20 ms steps; load average %.1f on %d cores" % (
        os.getloadavg()[0], os.cpu_count() or 0))


if __name__ == "__main__":
    main()
