#!/usr/bin/env python3
"""Overhead of the collective and DDP patches (pipetop_publish.comm).

Runs examples/ddp/train.py (2 Gloo ranks on this host, a small DDP model,
steps of about --step-ms: half a sleep in the collate function, half in
forward) under the automatic instrumentation with PIPETOP_COMM=1 and with
PIPETOP_COMM=0, alternating, --rounds times each. Only the comm patches
differ between the sides (the rest of the instrumentation is on in both).
Prints each round's wall ms per step (rank 0's, as the script measures
itself) and the median of the pairwise differences, in ms and in % of the
step. The design target is at most 1 % at 20 ms steps.

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
from typing import List

HERE = os.path.dirname(os.path.abspath(__file__))
TRAIN = os.path.join(HERE, "..", "..", "examples", "ddp", "train.py")


def med(v: List[float]) -> float:
    s = sorted(v)
    return s[len(s) // 2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def once(comm: bool, step_ms: float, steps: int) -> float:
    """Rank 0's wall ms per step of one 2-rank run."""
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
    return 1000 * m["wall_s"] / m["steps"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--step-ms", type=float, default=20.0)
    a = ap.parse_args()
    on, off, diff = [], [], []
    for i in range(a.rounds):
        pair = {}
        for comm in ((True, False) if i % 2 == 0 else (False, True)):
            pair[comm] = once(comm, a.step_ms, a.steps)
        on.append(pair[True])
        off.append(pair[False])
        diff.append(pair[True] - pair[False])
        print("round %d: comm patches on %.3f ms/step, off %.3f ms/step" % (i + 1, pair[True], pair[False]), flush=True)
    d = med(diff)
    print("median: on %.3f, off %.3f ms/step; median difference %+.3f ms/step = %+.2f %% of the step (%d rounds of %d steps, load %s)" % (
        med(on), med(off), d, 100 * d / med(off), a.rounds, a.steps, open("/proc/loadavg").read().split()[0]))


if __name__ == "__main__":
    main()
