"""Who a publisher is: its rank of a run (from the launcher's environment,
or from torch.distributed for ranks torch.multiprocessing.spawn started),
its pid as the host sees it, and when its process started."""

from __future__ import annotations

import multiprocessing
import os
import sys
import time
from typing import Any, Dict


def launcher(env: Any) -> Dict[str, Any]:
    """Which launcher started this process, and its rank, world size, local
    rank and run id, from the environment it set:

    * torchrun / ``python -m torch.distributed.run``: RANK, WORLD_SIZE,
      LOCAL_RANK and TORCHELASTIC_RUN_ID;
    * a script that sets the variables by hand: RANK and WORLD_SIZE, the run
      being MASTER_ADDR:MASTER_PORT (the rendezvous every rank shares);
    * Slurm (srun): SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, the run being
      slurm:SLURM_JOB_ID (.SLURM_STEP_ID when set).

    RANK and WORLD_SIZE win over Slurm's (torchrun started by srun). Empty
    when neither names a usable rank of more than zero ranks.
    """
    if env.get("WORLD_SIZE", "") != "":
        kind = "torchrun" if env.get("TORCHELASTIC_RUN_ID") else "env"
        rank, world, local = env.get("RANK", "0"), env["WORLD_SIZE"], env.get("LOCAL_RANK", "")
        run = env.get("TORCHELASTIC_RUN_ID") or ""
        if not run and env.get("MASTER_ADDR") and env.get("MASTER_PORT"):
            run = "%s:%s" % (env["MASTER_ADDR"], env["MASTER_PORT"])
    elif env.get("SLURM_NTASKS", "") != "" and env.get("SLURM_PROCID", "") != "":
        kind = "slurm"
        rank, world, local = env["SLURM_PROCID"], env["SLURM_NTASKS"], env.get("SLURM_LOCALID", "")
        run = "slurm:%s" % env["SLURM_JOB_ID"] if env.get("SLURM_JOB_ID") else ""
        if run and env.get("SLURM_STEP_ID"):
            run += "." + env["SLURM_STEP_ID"]
    else:
        return {}
    try:
        r, w = int(rank), int(world)
        lr = int(local) if local != "" else None
    except ValueError:
        return {}
    if w < 1 or not 0 <= r < w:
        return {}
    out: Dict[str, Any] = {"launcher": kind, "rank": r, "world_size": w}
    if lr is not None and lr >= 0:
        out["local_rank"] = lr
    if run:
        out["run"] = run.encode("utf-8")[:128].decode("utf-8", "ignore")  # the protocol's cap
    return out


def torch_rank(env: Any) -> Dict[str, Any]:
    """The rank of a process in an initialised torch.distributed process
    group that no launcher's environment names: the ranks that
    torch.multiprocessing.spawn starts (pytorch/examples' recipe: each calls
    init_process_group(rank=i, world_size=n)). Its launcher is ``spawn``
    in a multiprocessing child, else ``torch.distributed``; its run is the
    rendezvous, MASTER_ADDR:MASTER_PORT, when set (env://, the recipe's),
    else, in a multiprocessing child, its parent (``spawn:PPID``: the ranks
    of one spawn share it). torch is never imported here: empty when the
    process has not imported torch.distributed or not initialised it.
    """
    dist = sys.modules.get("torch.distributed")
    if dist is None:
        return {}
    try:
        if not (dist.is_available() and dist.is_initialized()):
            return {}
        r, w = int(dist.get_rank()), int(dist.get_world_size())
    except Exception:  # noqa: BLE001 - a broken process group names no rank
        return {}
    if w < 1 or not 0 <= r < w:
        return {}
    spawned = multiprocessing.parent_process() is not None
    out: Dict[str, Any] = {"launcher": "spawn" if spawned else "torch.distributed", "rank": r, "world_size": w}
    run = ""
    if env.get("MASTER_ADDR") and env.get("MASTER_PORT"):
        run = "%s:%s" % (env["MASTER_ADDR"], env["MASTER_PORT"])
    elif spawned:
        run = "spawn:%d" % os.getppid()
    if run:
        out["run"] = run.encode("utf-8")[:128].decode("utf-8", "ignore")
    return out


def who(env: Any) -> Dict[str, Any]:
    """This process's launcher and rank: the launcher's environment's
    (launcher), else an initialised torch.distributed's (torch_rank);
    empty for a single process."""
    return launcher(env) or torch_rank(env)


def rank_fields(env: Any) -> Dict[str, Any]:
    """The hello's rank, world_size and run of a rank (see who); empty for
    a single process."""
    return {k: v for k, v in who(env).items() if k in ("rank", "world_size", "run")}


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

