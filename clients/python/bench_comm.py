#!/usr/bin/env python3
"""Overhead of the collective and DDP patches (pipetop_publish.comm).

Runs examples/ddp/train.py (2 Gloo ranks on this host, a small DDP model,
steps of about --step-ms: half a sleep in the collate function, half in
forward) under the automatic instrumentation with PIPETOP_COMM=1 and with
PIPETOP_COMM=0, alternating, --rounds times each. Only the comm patches
differ between the sides (the rest of the instrumentation is on in both).
Prints each round's wall and CPU ms per step (rank 0's, as the script
measures itself; CPU is the process's, every thread, so the Gloo threads
that run the hook's callbacks count) and the median of the pairwise
differences, in ms and in % of the step. On a loaded machine the wall
clock moves by more than the patches cost (other processes' CPU, sleeps
waking late); the CPU time added per step is the steadier figure. The
design target is at most 1 % at 20 ms steps.

Run: /usr/bin/python3 clients/python/bench_comm.py [--rounds N] [--steps N]
On a busy machine, run it when the machine is otherwise idle (`uptime`).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
from typing import Dict, List, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
TRAIN = os.path.join(HERE, "..", "..", "examples", "ddp", "train.py")


def med(v: List[float]) -> float:
    s = sorted(v)
    return s[len(s) // 2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def once(comm: bool, step_ms: float, steps: int) -> Tuple[float, float]:
    """Rank 0's wall and CPU ms per step of one 2-rank run."""
    port, procs = free_port(), []
    for r in range(2):
        env = dict(os.environ, PYTHONPATH=HERE, PIPETOP_COMM="1" if comm else "0", PIPETOP_SUMMARY="0", PIPETOP_STACKS_HZ="0",
                   RANK=str(r), WORLD_SIZE="2", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        cmd = [sys.executable, "-m", "pipetop_publish.auto", TRAIN, "--steps", str(steps), "--base-ms", str(step_ms / 2)]
        procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    out = [p.communicate(timeout=600) for p in procs]
    for p, (o, e) in zip(procs, out):
        if p.returncode != 0:
            raise SystemExit("rank failed: %s" % e)
    m = json.loads(out[0][0].strip().splitlines()[-1])
    return 1000 * m["wall_s"] / m["steps"], 1000 * m["cpu_s"] / m["steps"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--step-ms", type=float, default=20.0)
    a = ap.parse_args()
    rows: Dict[str, List[float]] = {k: [] for k in ("on", "off", "dwall", "cpu_on", "cpu_off", "dcpu")}
    for i in range(a.rounds):
        pair = {}
        for comm in ((True, False) if i % 2 == 0 else (False, True)):
            pair[comm] = once(comm, a.step_ms, a.steps)
        (won, con), (woff, coff) = pair[True], pair[False]
        for k, v in (("on", won), ("off", woff), ("dwall", won - woff), ("cpu_on", con), ("cpu_off", coff), ("dcpu", con - coff)):
            rows[k].append(v)
        print("round %d: on %.3f ms/step (CPU %.3f), off %.3f ms/step (CPU %.3f)" % (i + 1, won, con, woff, coff), flush=True)
    off = med(rows["off"])
    print("median wall: on %.3f, off %.3f ms/step; median difference %+.3f ms = %+.2f %% of the step" % (
        med(rows["on"]), off, med(rows["dwall"]), 100 * med(rows["dwall"]) / off))
    print("median CPU: on %.3f, off %.3f ms/step; median difference %+.3f ms = %+.2f %% of the step (%d rounds of %d steps, load %s)" % (
        med(rows["cpu_on"]), med(rows["cpu_off"]), med(rows["dcpu"]), 100 * med(rows["dcpu"]) / off, a.rounds, a.steps,
        open("/proc/loadavg").read().split()[0]))

if __name__ == "__main__":
    main()
