"""Who a publisher is: its rank of a run (from the launcher's environment),
its pid as the host sees it, and when its process started."""

from __future__ import annotations

import os
import time
from typing import Any, Dict


def rank_fields(env: Any) -> Dict[str, Any]:
    """The hello's rank, world_size and run of a torchrun-launched process.

    Read from torchrun's RANK and WORLD_SIZE; the run id is
    TORCHELASTIC_RUN_ID, else MASTER_ADDR:MASTER_PORT. Empty (a single
    process, rank 0 of 1) when WORLD_SIZE is unset or the values are not
    usable.
    """
    try:
        world = int(env.get("WORLD_SIZE", ""))
        rank = int(env.get("RANK", "0"))
    except ValueError:
        return {}
    if world < 1 or not 0 <= rank < world:
        return {}
    run = env.get("TORCHELASTIC_RUN_ID") or ""
    if not run and env.get("MASTER_ADDR") and env.get("MASTER_PORT"):
        run = "%s:%s" % (env["MASTER_ADDR"], env["MASTER_PORT"])
    out: Dict[str, Any] = {"rank": rank, "world_size": world}
    if run:
        out["run"] = run.encode("utf-8")[:128].decode("utf-8", "ignore")  # the protocol's cap
    return out


def host_pid(status_path: str = "/proc/self/status") -> int:
    """Return the first NSpid field of /proc/self/status, else os.getpid()."""
    try:
        with open(status_path, encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("NSpid:"):
                    fields = line.split()[1:]
                    if fields and fields[0].isdigit() and int(fields[0]) > 0:
                        return int(fields[0])
                    break
    except OSError:
        pass
    return os.getpid()


def process_start_ns() -> int:
    """Return when this process started, as Unix ns (now when unknown)."""
    try:
        with open("/proc/self/stat", encoding="ascii", errors="replace") as f:
            stat = f.read()
        ticks = int(stat[stat.rindex(")") + 2 :].split()[19])
        with open("/proc/uptime", encoding="ascii") as f:
            uptime = float(f.read().split()[0])
        hz = os.sysconf("SC_CLK_TCK")
        return time.time_ns() - int((uptime - ticks / hz) * 1e9)
    except (OSError, ValueError, IndexError):
        return time.time_ns()

