"""The end-of-run summary of an automatically instrumented run.

At exit the run's totals are printed as a stage table (stderr) and written to
``pipetop-summary-NAME-PID.json`` in ``$PIPETOP_SUMMARY_DIR`` (default: the
working directory). ``PIPETOP_SUMMARY=file`` writes the file only (``pipetop
run`` prints the table itself, with the verdict); ``PIPETOP_SUMMARY=0``
does neither. The schema is documented in docs/python.md.
"""

from __future__ import annotations

import json
import socket
import os
import sys
import time
from typing import Any, Dict, Optional, TextIO

from .stages import CORE

SCHEMA = "pipetop-summary/2"


def build(pub: Any, loader: Optional[Dict[str, Any]], code: Optional[Dict[str, Any]] = None,
          ddp: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """The summary document of pub's run so far; code is the run's stack
    samples (a stacks frame body), None without any; ddp is the DDP
    gradient buckets' detail (comm.Buckets.report), None without DDP."""
    s = pub.summary()
    steps, wall = s["steps"], s["wall_ns"]
    secs = wall / 1e9
    stages = []
    for st in s["stages"]:
        total = st["cpu_ns"]
        if total == 0 and st["name"] not in CORE:
            continue
        stages.append({
            "name": st["name"],
            "total_ns": total,
            "mean_ns": total / steps if steps else 0.0,
            "share": total / wall if wall else 0.0,
        })
    return {
        "schema": SCHEMA,
        "name": pub.name,
        "pid": pub._pid,
        "argv": list(sys.argv),
        "end_ns": time.time_ns(),
        "steps": steps,
        "samples": s["samples"],
        "wall_ns": wall,
        "step_mean_ns": wall / steps if steps else 0.0,
        "steps_per_sec": steps / secs if secs else 0.0,
        "samples_per_sec": s["samples"] / secs if secs else 0.0,
        "stages": stages,
        "first_step": s["first_step"],
        # The totals so far at fixed instants (multiples of an interval
        # that doubles as the run grows): the job summary judges the ranks
        # over time from their differences.
        "timeline": s["timeline"],
        # The newest steps one by one: the pattern of the run's pauses
        # (a checkpoint or an epoch boundary every N steps).
        "recent": s["recent"],
        # The bytes the process wrote (/proc/self/io), for the size of a
        # checkpoint.
        "io": _io(),
        "loader": loader,
        "stacks": code,
        "ddp": ddp,
        # Who ran it: the launcher and rank (identity.who: launcher,
        # rank, world_size, local_rank, run; absent for a single process)
        # and the host, for the job summary of a multi-rank run.
        "rank_of": pub.rank_of or None,
        "host": socket.gethostname(),
    }


def _io() -> Optional[Dict[str, int]]:
    """The process's write counters from /proc/self/io (wchar: bytes
    through write calls; write_bytes: bytes that reached the disk), None
    where unreadable."""
    try:
        with open("/proc/self/io", encoding="ascii") as f:
            fields = dict(line.split(":", 1) for line in f if ":" in line)
        return {"wchar": int(fields["wchar"]), "write_bytes": int(fields["write_bytes"])}
    except (OSError, KeyError, ValueError):
        return None


def path_for(name: str, pid: int) -> str:
    """Where the summary of run NAME, process PID is written."""
    clean = "".join(c if c.isalnum() or c in "-_." else "_" for c in name) or "python"
    return os.path.join(os.environ.get("PIPETOP_SUMMARY_DIR") or os.getcwd(), "pipetop-summary-%s-%d.json" % (clean, pid))


def write(doc: Dict[str, Any], path: str) -> None:
    """Write doc to path atomically (temporary file, fsync, rename)."""
    tmp = "%s.tmp%d" % (path, os.getpid())
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def render(doc: Dict[str, Any], out: TextIO) -> None:
    """Print the stage table, throughput and loader line of doc."""
    out.write("pipetop: %s (pid %d): %d steps in %.2f s, %.1f steps/s, %.1f samples/s\n" % (
        doc["name"], doc["pid"], doc["steps"], doc["wall_ns"] / 1e9, doc["steps_per_sec"], doc["samples_per_sec"]))
    out.write("  %-10s %10s %7s %11s\n" % ("stage", "total", "share", "mean/step"))
    for st in doc["stages"]:
        out.write("  %-10s %8.3f s %6.1f%% %8.2f ms\n" % (st["name"], st["total_ns"] / 1e9, 100 * st["share"], st["mean_ns"] / 1e6))
    first = doc.get("first_step")
    if first and doc["steps"] > 1:
        out.write("  first step %.2f s (start-up: loader workers, lazy initialization)\n" % (first["wall_ns"] / 1e9))
    ld = doc.get("loader")
    if ld:
        out.write("  loader: %s\n" % loader_line(ld))
    big = max(doc["stages"], key=lambda s: s["share"], default=None)
    if big is not None:
        out.write("  largest stage: %s, %.0f%% of the step time (pipetop run prints the verdict)\n" % (big["name"], 100 * big["share"]))


def loader_line(ld: Dict[str, Any]) -> str:
    """One line about the DataLoader's settings and worker load."""
    if not ld.get("workers"):
        return "num_workers=0 (batches are loaded on the training thread), %.1f batches/s" % ld.get("batches_per_sec", 0)
    each = ", ".join("%.0f%%" % (100 * f) for f in ld.get("worker_busy_each") or [])
    return "num_workers=%d busy %.0f%% (%s), prefetch_factor=%d, pin_memory=%s, %.1f batches/s" % (
        ld["workers"], 100 * ld.get("worker_busy", 0), each or "unknown", ld.get("prefetch_factor", 0),
        ld.get("pin_memory", False), ld.get("batches_per_sec", 0))


def finish(pub: Any, loader: Optional[Dict[str, Any]], code: Optional[Dict[str, Any]] = None,
           ddp: Optional[Dict[str, Any]] = None) -> Optional[str]:
    """Print and write the summary as PIPETOP_SUMMARY says; returns the
    path written, if any. A run without a single step leaves nothing."""
    mode = os.environ.get("PIPETOP_SUMMARY", "print").strip().lower()
    if mode in ("0", "off", "no", "false") or pub._step_no == 0:
        return None
    doc = build(pub, loader, code, ddp)
    path = path_for(pub.name, pub._pid)
    try:
        write(doc, path)
    except OSError as e:
        sys.stderr.write("pipetop: write run summary %s: %s\n" % (path, e))
        path = None
    if mode != "file":
        render(doc, sys.stderr)
        if path:
            sys.stderr.write("  summary written to %s\n" % path)
    return path
