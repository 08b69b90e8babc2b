#!/usr/bin/env python3
"""Overhead of the automatic instrumentation, side by side in one run.

Runs bench_auto_loop.py plain (`python loop.py`) and instrumented (`python
-m pipetop_publish.auto loop.py`), alternating, several rounds at each step
length, and prints the mean step time of both and the overhead. The design
targets are at most 2 % at 2 ms steps and 0.5 % at 20 ms steps. The bare
loop (0 ms planted) gives the instrumentation's absolute cost per step.
Both wall time and the training thread's CPU time are printed: on a busy
machine the CPU time is the steadier measure of what the patches cost.

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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5, help="plain/instrumented pairs per step length")
    ap.add_argument("--steps", type=int, default=0, help="measured steps per run (default: about 2 s of steps)")
    ap.add_argument("--step-ms", type=float, nargs="*", default=[0.0, 2.0, 20.0])
    args = ap.parse_args()
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
    print("targets: <= 2 %% at 2 ms steps, <= 0.5 %% at 20 ms steps; load average %.1f on %d cores" % (
        os.getloadavg()[0], os.cpu_count() or 0))


if __name__ == "__main__":
    main()
