"""The stage word: what pipetop's stack sampler, reading this process's
memory from outside (metrics/pystack), needs to know besides the stacks:
the stage the training thread is in and, in a DataLoader worker, its id
and the fetch in progress. A block of 8 little-endian 64-bit words whose
address the hello announces (docs/protocol.md, ``stage_word``):

====  =====================================================================
word  meaning
====  =====================================================================
0     MAGIC: the block is pipetop's (a forked child holds it at the same
      address)
1     the training thread's stage: 0 outside every instrumented call
      (other), i + 1 for the hello's ``stage_word.stages[i]``
2     in a DataLoader worker, its id + 1; 0 in the training process
3     in a worker, when the fetch in progress began (CLOCK_MONOTONIC ns,
      ``time.perf_counter_ns``); 0 outside a fetch
4     in a worker, its median fetch (ns; 0 until it has made 8)
5     1 once the process samples its own stacks (a viewer was refused the
      read: ``ask_inside``), so that a reader from outside stops and no
      viewer counts a sample twice; 0 before
====  =====================================================================

Each word is written with one aligned 8-byte store, so a read from
outside sees the old value or the new one, never a mix.

The outside read is used only under ``pipetop run``, which names itself in
``PIPETOP_STACKS_READER``. Until a viewer refuses it (its hello says
``stacks_inside``), the in-process stack sampler (stacks.StackSampler)
stays idle: ``inside()`` is false. The flag lives in a shared page, so
DataLoader workers forked before the viewer's word see it too. Under Yama's
ptrace_scope 1 the process lets the reader read it (PR_SET_PTRACER).
"""

from __future__ import annotations

import ctypes
import mmap
import os
import sys
from typing import Any, Dict, List, Optional, Sequence

READER_ENV = "PIPETOP_STACKS_READER"
MAGIC = int.from_bytes(b"pipetop1", "little")
WORDS = 8
STAGE, WORKER, FETCH, TYPICAL, INSIDE = 1, 2, 3, 4, 5
PR_SET_PTRACER = 0x59616D61
YAMA = "/proc/sys/kernel/yama/ptrace_scope"

# The block: a bytearray (private: a forked child's writes are its own)
# and the 64-bit view the writers store through.
_block = bytearray(WORDS * 8)
_words: Any = memoryview(_block).cast("q")
_words[0] = MAGIC
_stages: Dict[str, int] = {}
_said = False


def address() -> int:
    """The block's address in this process."""
    return ctypes.addressof(ctypes.c_char.from_buffer(_block))


def reader(env: Optional[Dict[str, str]] = None) -> int:
    """The pid of the pipetop that reads this process's stacks from
    outside (PIPETOP_STACKS_READER); 0 when none does."""
    raw = (os.environ if env is None else env).get(READER_ENV, "").strip()
    try:
        pid = int(raw)
    except ValueError:
        return 0
    return pid if pid > 0 else 0


def _flag() -> Any:
    """The inside flag: a page shared with the processes forked from
    this one (DataLoader workers are forked before the publisher starts),
    1 once the in-process stack sampler must run: at once without a
    reader."""
    try:
        page = mmap.mmap(-1, mmap.PAGESIZE)
    except OSError:
        return None
    page[0] = 0 if reader() else 1
    return page


_shared: Any = _flag()


def setup(stages: Sequence[str]) -> Optional[Dict[str, Any]]:
    """Make the block ready in the training process: the stage codes of
    stages, and the reader let in; returns the hello's ``stage_word``
    (None without a reader, or without the shared flag: the in-process
    stack sampler runs from the start)."""
    global _stages
    pid = reader()
    if pid == 0 or _shared is None:
        return None
    let_in(pid)
    _stages = {name: i + 1 for i, name in enumerate(stages)}
    return {"addr": address(), "stages": list(stages)}


def let_in(pid: int) -> None:
    """Under Yama ptrace_scope 1, name pid as this process's tracer, so
    that it may read the memory even when it is not an ancestor (a
    launcher in between that exited, say); errors are ignored."""
    try:
        with open(YAMA) as f:
            if f.read().strip() != "1":
                return
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PTRACER, ctypes.c_ulong(pid), 0, 0, 0)
    except (OSError, AttributeError):
        pass


def set_stage(name: Optional[str]) -> None:
    """The training thread is in stage name now (None: outside every
    instrumented call)."""
    _words[STAGE] = _stages.get(name, 0) if name is not None else 0


def set_worker(worker: int, parent: int = 0) -> None:
    """This process is DataLoader worker worker; parent is the address
    of the block the training process announced (0: unknown). A worker
    whose block is elsewhere (a spawned one, not forked) cannot be read
    from outside: it samples its own stacks."""
    global _shared
    _words[WORKER] = worker + 1
    if parent and parent != address() and _shared is not None and _shared[0] != 1:
        _shared = None


def set_fetch(start_ns: int) -> None:
    """A fetch began at start_ns (0: it ended)."""
    _words[FETCH] = start_ns


def set_typical(ns: int) -> None:
    """The worker's median fetch is ns."""
    _words[TYPICAL] = ns


def inside() -> bool:
    """Whether the in-process stack sampler must run: no reader reads
    this process from outside, or a viewer said the read was refused."""
    s = _shared
    return s is None or s[0] == 1


def ask_inside(reason: str) -> None:
    """A viewer cannot read this process from outside (reason): the
    in-process stack sampler takes over, said once."""
    global _said
    if inside():
        return
    _shared[0] = 1
    _words[INSIDE] = 1
    if not _said:
        _said = True
        sys.stderr.write("pipetop: stack samples from inside the process: %s\n" % (reason,))


def words() -> List[int]:
    """The block's words (tests)."""
    return list(_words)
