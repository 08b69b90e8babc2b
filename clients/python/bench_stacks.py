#!/usr/bin/env python3
"""Overhead of the stack sampler, side by side on the same loop.

Two tables, both on bench_auto_loop.py (a DataLoader, an MLP, Adam and a
busy-wait that makes each step last --step-ms), both with the automatic
instrumentation on, so that only the stack sampler differs:

1. separate processes, alternating: ``python -m pipetop_publish.auto
   bench_auto_loop.py`` with PIPETOP_STACKS_HZ=100 and with 0; the median
   wall time per step of each side over the rounds and the median of the
   pairwise differences;
2. one process, alternating blocks of steps with the training thread's
   stack sampler running (and the switch interval it sets) and stopped:
   no process start or scheduling differences between the sides. The
   sampler costs the training thread its GIL hand-overs, which thread CPU
   time does not see, so both tables time the wall clock.

The design targets are at most 1 % at 20 ms steps and 3 % at 2 ms steps.
Run: /usr/bin/python3 clients/python/bench_stacks.py [--rounds N] [--blocks N]
On a busy machine, run it when the machine is otherwise idle (check with
`uptime`), or pin it to a core with `taskset -c 1`.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Dict, List

HERE = os.path.dirname(os.path.abspath(__file__))
LOOP = os.path.join(HERE, "bench_auto_loop.py")


def med(v: List[float]) -> float:
    s = sorted(v)
    return s[len(s) // 2]


def once(hz: float, step_ms: float, steps: int, env: dict) -> float:
    """Mean wall ms per step of one instrumented run at hz samples/s."""
    cmd = [sys.executable, "-m", "pipetop_publish.auto", LOOP, "--step-ms", str(step_ms), "--steps", str(steps)]
    out = subprocess.run(cmd, env=dict(env, PIPETOP_STACKS_HZ=str(hz)), capture_output=True, text=True, check=True, timeout=600)
    return json.loads(out.stdout.strip().splitlines()[-1])["step_ms"]


def ab_child(step_ms: float, blocks: int, steps: int, hz: float) -> None:
    """In this process: blocks pairs of steps-step blocks, sampled then not
    (order alternating); prints the wall ms per step of each."""
    import threading

    from pipetop_publish import auto, stacks

    import bench_auto_loop as loop

    auto.install()
    loader, model, opt = loop.build(step_ms, (2 * blocks + 1) * steps)
    it = iter(loader)
    loop.run(it, model, opt, steps)  # warm-up; starts the instrumentation
    if auto.state.hotcode is not None:
        auto.state.hotcode.stop()  # this benchmark runs its own samplers
    on: List[float] = []
    off: List[float] = []
    for b in range(2 * blocks):
        sampled = (b % 2 == 0) == (b // 2 % 2 == 0)
        sampler = None
        if sampled:
            stacks.tighten_switch(stacks.TRAIN_SWITCH)
            sampler = stacks.StackSampler(threading.get_ident(), stacks.TRAIN, -1, lambda: "other", hz)
            sampler.start()
        else:
            sys.setswitchinterval(stacks.PYTHON_SWITCH)
        t0 = time.perf_counter()
        loop.run(it, model, opt, steps)
        (on if sampled else off).append((time.perf_counter() - t0) / steps * 1e3)
        if sampler is not None:
            sampler.stop()
            sampler._thread.join()
    print(json.dumps({"on": on, "off": off}))


def ab(step_ms: float, blocks: int, hz: float, env: dict) -> Dict[str, float]:
    """Medians of the one-process blocks and of their pairwise differences."""
    steps = max(50, int(1000 / max(step_ms, 0.5)))
    cmd = [sys.executable, os.path.abspath(__file__), "--ab-child", str(step_ms), str(blocks), str(steps), str(hz)]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True, timeout=1200)
    r = json.loads(out.stdout.strip().splitlines()[-1])
    return {"on": med(r["on"]), "off": med(r["off"]), "diff": med([a - b for a, b in zip(r["on"], r["off"])]), "steps": steps}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=7, help="sampled/unsampled process pairs per step length")
    ap.add_argument("--blocks", type=int, default=15, help="sampled/unsampled block pairs of the one-process table")
    ap.add_argument("--hz", type=float, default=100.0)
    ap.add_argument("--step-ms", type=float, nargs="*", default=[2.0, 20.0])
    ap.add_argument("--ab-child", nargs=4, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.ab_child:
        ab_child(float(args.ab_child[0]), int(args.ab_child[1]), int(args.ab_child[2]), float(args.ab_child[3]))
        return
    d = tempfile.mkdtemp(prefix="ptbench", dir="/tmp")
    env = dict(os.environ, PYTHONPATH=HERE, PIPETOP_SOCKET_DIR=d, PIPETOP_SUMMARY="0")
    print("load average %.1f on %d cores; stack sampler at %g Hz" % (os.getloadavg()[0], os.cpu_count() or 0, args.hz))
    print("separate processes, %d alternating pairs: wall ms/step (medians)" % args.rounds)
    print("%-6s | %9s %9s %9s %9s" % ("step", "off", "on", "cost", "overhead"))
    for ms in args.step_ms:
        steps = max(100, int(3000 / max(ms, 0.5)))
        on, off = [], []
        for _ in range(args.rounds):
            off.append(once(0, ms, steps, env))
            on.append(once(args.hz, ms, steps, env))
        diff = med([a - b for a, b in zip(on, off)])
        print("%-6s | %9.4f %9.4f %+6.1f us %+8.2f%%" % ("%g ms" % ms, med(off), med(on), 1e3 * diff, 100 * diff / med(off)))
    print()
    print("one process, %d sampled/unsampled block pairs: wall ms/step (medians)" % args.blocks)
    print("%-6s %-6s | %9s %9s %9s %9s" % ("step", "steps", "off", "on", "cost", "overhead"))
    for ms in args.step_ms:
        r = ab(ms, args.blocks, args.hz, env)
        print("%-6s %-6d | %9.4f %9.4f %+6.1f us %+8.2f%%" % (
            "%g ms" % ms, r["steps"], r["off"], r["on"], 1e3 * r["diff"], 100 * r["diff"] / r["off"]))
    print("targets: <= 3 %% at 2 ms steps, <= 1 %% at 20 ms steps; load average %.1f" % os.getloadavg()[0])


if __name__ == "__main__":
    main()
