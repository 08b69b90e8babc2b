#!/usr/bin/env python3
"""Check one ``pipetop --json`` snapshot of a training run and print a digest.

    stagecheck.py SNAPSHOT.json [--label L] [--need-gpu] [--need-stage NAME] [--goal 0.9]

The checks (exit status 1 and one line per failure when any fails):

- the snapshot has a trainer and a summary of at least one step;
- every stage's mean CPU time is at most the mean step (the stages add up to
  the step: "other" is the remainder), and so is their sum;
- with GPU times: the GPU busy time per step (summed CUDA-event stage times)
  is at most the step's wall time, and so is each stage's GPU time;
- ``--need-gpu``: the run must carry GPU stage times at all;
- ``--need-stage NAME``: the stage must be in the table (with ``--need-gpu``,
  with a GPU time: a DDP run's ``comm``).

Sums may exceed the step by ``TOLERANCE`` (window edges: GPU times of a step
arrive a few steps after it). The digest line gives throughput, the step,
GPU busy, each stage as CPU/GPU ms, the verdict, and the GPU readings with
their sources (GPM SM activity and occupancy next to NVML kernel-active).
``--goal F`` adds whether GPU busy reached F and, if not, what holds it back;
missing the goal is reported, not failed: it is a measurement.
Only the standard library is used, so it runs under any python3.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Dict, List, Optional, Sequence, Tuple

#: Relative slack for sums compared with the mean step.
TOLERANCE = 0.05


def _ms(ns: Optional[float]) -> str:
    return "-" if ns is None else "%.2f" % (ns / 1e6)


def _reading(r: Any) -> Optional[Tuple[float, str]]:
    """Return (value, source) of a reading object, or None when not ok."""
    if not isinstance(r, dict) or r.get("state") != "ok" or r.get("value") is None:
        return None
    return float(r["value"]), str(r.get("source", "?"))


def check(snap: Dict[str, Any], need_gpu: bool = False, need_stages: Sequence[str] = ()) -> List[str]:
    """Return the failed checks of one snapshot (empty when all hold)."""
    if not snap.get("trainer"):
        return ["no trainer in the snapshot (link %s)" % (snap.get("link") or {}).get("state")]
    s = snap.get("summary")
    if not s or not s.get("steps"):
        return ["no steps in the summary window"]
    wall = float(s.get("wall_mean_ns") or 0)
    if wall <= 0:
        return ["mean step wall time is %r" % wall]
    fails = []
    limit = wall * (1 + TOLERANCE)
    stages = s.get("stages") or []
    for st in stages:
        if st["mean_ns"] > limit:
            fails.append("stage %s: CPU %s ms > step %s ms" % (st["name"], _ms(st["mean_ns"]), _ms(wall)))
        if st.get("has_gpu") and st.get("gpu_mean_ns", 0) > limit:
            fails.append("stage %s: GPU %s ms > step %s ms" % (st["name"], _ms(st["gpu_mean_ns"]), _ms(wall)))
    total = sum(st["mean_ns"] for st in stages)
    if total > limit:
        fails.append("stages add up to %s ms > step %s ms" % (_ms(total), _ms(wall)))
    if s.get("has_gpu"):
        busy = float(s.get("gpu_busy_mean_ns") or 0)
        if busy > limit:
            fails.append("GPU busy %s ms per step > step %s ms" % (_ms(busy), _ms(wall)))
    elif need_gpu:
        fails.append("no GPU stage times (CUDA events) in the summary")
    by_name = {st["name"]: st for st in stages}
    for name in need_stages:
        st = by_name.get(name)
        if st is None:
            fails.append("no stage %s in the table (it has %s)" % (name, ", ".join(by_name) or "none"))
        elif need_gpu and not st.get("has_gpu"):
            fails.append("stage %s has no GPU time (CUDA events)" % name)
    return fails


def gpu_readings(snap: Dict[str, Any]) -> str:
    """Describe device 0's activity readings with their sources."""
    gpu = snap.get("gpu") or {}
    devs = gpu.get("devices") or []
    if not devs:
        return "GPU: %s" % (gpu.get("status") or "none")
    d = devs[0]
    parts = []
    for key, label in (("sm_activity", "SM"), ("sm_occupancy", "occupancy"), ("tensor_active", "tensor"),
                       ("kernel_active", "kernel-active"), ("mem_used", None)):
        r = _reading(d.get(key))
        if r is None:
            continue
        if label is None:
            parts.append("mem %.1f GiB" % (r[0] / 2**30))
        else:
            parts.append("%s %.0f %% (%s)" % (label, r[0], r[1]))
    return "GPU%s %s: %s" % (d.get("index", 0), d.get("name", "?"), ", ".join(parts) or "no readings")


def digest(snap: Dict[str, Any], label: str, goal: Optional[float] = None) -> str:
    """One line: throughput, step, GPU busy, stages, verdict, GPU readings."""
    s = snap.get("summary") or {}
    v = snap.get("verdict") or {}
    out = ["%s: %.1f samples/s, %.2f it/s, step %s ms" % (
        label, s.get("samples_per_sec", 0), s.get("steps_per_sec", 0), _ms(s.get("wall_mean_ns")))]
    if s.get("has_gpu"):
        out.append("GPU busy %.0f %% (CUDA events)" % (100 * s.get("gpu_busy", 0)))
    else:
        out.append("GPU busy - (no CUDA-event times)")
    stages = ["%s %s/%s" % (st["name"], _ms(st["mean_ns"]), _ms(st.get("gpu_mean_ns") if st.get("has_gpu") else None))
              for st in s.get("stages") or []]
    out.append("stages CPU/GPU ms: " + ", ".join(stages))
    out.append("verdict %s%s: %s" % (v.get("kind", "-"), " (%s)" % v["stage"] if v.get("stage") else "",
                                      v.get("headline", "")))
    out.append(gpu_readings(snap))
    if goal is not None:
        busy = s.get("gpu_busy", 0) if s.get("has_gpu") else 0
        if busy >= goal:
            out.append("goal GPU busy >= %.0f %%: met (%.0f %%)" % (100 * goal, 100 * busy))
        else:
            out.append("goal GPU busy >= %.0f %%: NOT met (%.0f %%), held back by %s; next: %s" % (
                100 * goal, 100 * busy, v.get("stage") or v.get("kind", "?"), v.get("next", "-")))
    return "; ".join(out)


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("snapshot", help="file with one pipetop --json snapshot")
    p.add_argument("--label", default="run", help="name printed at the start of the digest")
    p.add_argument("--need-gpu", action="store_true", help="fail when the run has no GPU stage times")
    p.add_argument("--need-stage", action="append", default=[], metavar="NAME",
                   help="fail when the table lacks this stage (with --need-gpu: or its GPU time); repeatable")
    p.add_argument("--goal", type=float, help="report whether GPU busy reached this share (0..1)")
    a = p.parse_args(argv)
    try:
        with open(a.snapshot, encoding="utf-8") as f:
            snap = json.load(f)
    except (OSError, ValueError) as e:
        print("%s: cannot read the snapshot %s: %s" % (a.label, a.snapshot, e))
        return 1
    if not isinstance(snap, dict):
        print("%s: %s is not a JSON object" % (a.label, a.snapshot))
        return 1
    fails = check(snap, a.need_gpu, a.need_stage)
    if not fails:
        print(digest(snap, a.label, a.goal))
    for f in fails:
        print("%s: CHECK FAILED: %s" % (a.label, f))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
