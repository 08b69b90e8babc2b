"""The training process's other Python threads, sampled beside the training
thread: each one's stack, its CPU time and how much of it ran without the
GIL, so that a viewer can name a thread that holds the GIL while the
training thread waits for it (docs/verdicts.md, gil-bound), and leave alone
a thread that runs native code which releases the GIL (a big ``torch.mm``,
a sleep, a blocking read).

At each tick of the stack sampler every other thread's stack and CPU clock
are read: its share of a core. A few times a second, while a thread was
seen using a CPU, the sampler probes: it keeps the GIL while it sleeps
(``usleep`` called through ``ctypes.PyDLL``, which does not release it)
for PROBE_NS, and reads the threads' CPU clocks at both ends. Sleeping
leaves the CPU to the threads it measures. A probe that ends later than
PROBE_SWITCH of the interpreter's switch interval after the tick took the
GIL is not counted: a thread waiting for the GIL may have made it hand the
GIL over, and getting it back takes a whole switch interval. A thread that
gains CPU time in the probe runs while another thread holds the GIL: in a
C call that released it. A thread that runs most of the time but gains
nothing in the probes runs only with the GIL: Python code, or C code
that keeps it. Its share of a core, less its share in the probes, is the
CPU it spent holding the GIL.

pipetop's own threads (named ``pipetop-...``) are left out, and their OS
names (``/proc/PID/task/TID/comm``) are set to their threading names so that
a viewer reading ``/proc`` does not count them as the run's.
"""

from __future__ import annotations

import functools
import sys
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Set, Tuple

from . import stacks as _stacks

OWN_PREFIX = "pipetop"  # the threading names of this package's threads
MAX_THREADS = 32  # other threads sampled at once
MAX_THREAD_ROWS = 16  # stacks a thread's entry of a stacks frame keeps
LIST_EVERY_NS = 1_000_000_000  # how often the thread list is read again
PROBE_EVERY_NS = 100_000_000  # at most ten probes a second
PROBE_NS = 200_000  # a probe holds the GIL this long ...
PROBE_SWITCH = 0.9  # ... and counts only if it ended within this share of the switch interval of the tick's start
PROBE_BUSY_NS = 50_000_000  # a probe is made only when other threads used this much CPU since the last one

_now = time.perf_counter_ns

# A thread's totals: [cpu_ns, covered_ns, samples, CPU ns gained in probes,
# probes' ns, probes].
CPU, COVERED, SAMPLES, FREE, PROBED, PROBES = range(6)
NTOTALS = 6


def name_own(t: threading.Thread, named: Set[int]) -> None:
    """Give a pipetop thread its threading name as its OS name, once (named
    holds the native ids done)."""
    nid = t.native_id
    if nid is not None and nid not in named and t.name.startswith(OWN_PREFIX):
        _stacks.name_os_thread(t.name, nid)
        named.add(nid)


def name_all_own(named: Set[int]) -> None:
    """name_own for every thread of the process."""
    for t in threading.enumerate():
        name_own(t, named)


def name_all(named: Set[int]) -> None:
    """Give every thread but the main one its threading name as its OS
    name, once (named holds the native ids done), unless the program named
    it itself (its OS name is not the process's): pipetop, reading the
    stacks from outside, knows threads by their OS names, which CPython
    before 3.14 leaves at the process's."""
    main = threading.main_thread()
    process = _comm(None)
    for t in threading.enumerate():
        nid = t.native_id
        if t is main or nid is None or nid in named:
            continue
        named.add(nid)
        if _comm(nid) == process:
            _stacks.name_os_thread(t.name, nid)


def _comm(native_id: Optional[int]) -> str:
    """The OS name of a thread of this process (the main one: None)."""
    path = "/proc/self/comm" if native_id is None else "/proc/self/task/%d/comm" % native_id
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return ""


def _gil_sleep() -> Optional[Callable[[int], int]]:
    """libc's usleep called with the GIL held; None where ctypes or libc
    cannot give it."""
    try:
        import ctypes

        fn = ctypes.PyDLL(None).usleep
        fn.argtypes, fn.restype = [ctypes.c_uint], ctypes.c_int
        return fn
    except Exception:  # noqa: BLE001 - no ctypes, a static build: no probes
        return None


def cpu_clock(native_id: int) -> int:
    """The clock id of a thread's CPU time (Linux's encoding of a thread
    CPU clock: what pthread_getcpuclockid returns, made from the thread's
    id, so that a thread that ended gives EINVAL rather than a read of a
    freed pthread)."""
    return ((~native_id) << 3) | 6


class _Thread:
    """What the watch keeps of one thread: its names, clock and the CPU
    time of its last read."""

    __slots__ = ("name", "native_id", "clock", "last")

    def __init__(self, name: str, native_id: int) -> None:
        self.name = name
        self.native_id = native_id
        self.clock = cpu_clock(native_id)
        self.last: Optional[int] = None


class ThreadWatch:
    """Samples every Python thread of this process but the skipped ones and
    pipetop's own. The stack sampler calls sample() at each tick; take()
    hands what was sampled to the publishing thread.

    Args:
        skip: idents of threads not to sample (the training thread; the
            sampler's own thread is skipped too).
    """

    def __init__(self, skip: Set[int]) -> None:
        self.skip = set(skip)
        self.fold = _stacks.Fold(cap=_stacks.MAX_RUN_ROWS)  # (native id, -1, name, raw stack)
        self.totals: Dict[int, List[int]] = {}
        self._threads: Dict[int, _Thread] = {}
        self._listed = -LIST_EVERY_NS
        self._named: Set[int] = set()
        self._probed = 0  # when the last probe started
        self._busy = 0  # CPU ns the threads used since the last probe
        self._sleep = _gil_sleep()
        self._lock = threading.Lock()

    def _list(self, now: int) -> None:
        """Read the thread list again: names may change, threads come and
        go; pipetop's own threads get their OS names."""
        self._listed = now
        me = threading.get_ident()
        seen: Dict[int, _Thread] = {}
        for t in threading.enumerate():
            ident, nid = t.ident, getattr(t, "native_id", None)
            if ident is None or nid is None:
                continue
            if t.name.startswith(OWN_PREFIX):
                name_own(t, self._named)
                continue
            if ident == me or ident in self.skip or len(seen) >= MAX_THREADS:
                continue
            old = self._threads.get(ident)
            if old is not None and old.native_id == nid:
                old.name = t.name
                seen[ident] = old
            else:
                seen[ident] = _Thread(t.name, nid)
        self._threads = seen

    def stacks(self, frames: Dict[int, Any]) -> Dict[int, Tuple[Any, ...]]:
        """The raw stacks ((code, line) innermost first) of the watched
        threads in frames, sys._current_frames() read with the GIL held.
        They are walked at once, so that the caller can drop frames before
        the GIL can pass: CPython 3.11 crashed (a segfault, a frame's memory
        reused by another object) when frame objects of other threads lived
        on while those threads ran."""
        now = _now()
        if now - self._listed >= LIST_EVERY_NS:
            self._list(now)
        out: Dict[int, Tuple[Any, ...]] = {}
        for ident in self._threads:
            f = frames.get(ident)
            raw = []
            while f is not None and len(raw) < _stacks.MAX_DEPTH:
                raw.append((f.f_code, f.f_lineno))
                f = f.f_back
            if raw:
                out[ident] = tuple(raw)
        return out

    def sample(self, stacks: Dict[int, Tuple[Any, ...]], ns: int) -> None:
        """Sample every other thread: stacks is what stacks() returned at
        this tick, ns the wall time the sample stands for."""
        start = _now()
        live: List[Tuple[_Thread, int]] = []
        with self._lock:
            for ident, t in self._threads.items():
                raw = stacks.get(ident)
                if raw is None:
                    continue
                try:
                    c = time.clock_gettime_ns(t.clock)
                except OSError:  # the thread ended
                    continue
                self._add(t, c, ns)
                self.fold.add((t.native_id, -1, t.name, raw), 1, ns)
                live.append((t, c))
            if live and self._sleep is not None and start - self._probed >= PROBE_EVERY_NS and self._busy >= PROBE_BUSY_NS:
                self._probe(self._sleep, live, start)

    def _add(self, t: _Thread, c: int, ns: int) -> None:
        tot = self.totals.get(t.native_id)
        if tot is None:
            tot = self.totals[t.native_id] = [0] * NTOTALS
        if t.last is not None and c >= t.last:
            tot[CPU] += c - t.last
            tot[COVERED] += ns
            self._busy += c - t.last
        t.last = c
        tot[SAMPLES] += 1

    def _probe(self, sleep: Callable[[int], int], live: List[Tuple[_Thread, int]], start: int) -> None:
        """Keep the GIL for PROBE_NS and add what CPU each thread gained
        meanwhile, unless the probe ended too long after start (the tick's
        start)."""
        self._probed, self._busy = start, 0
        c0 = []
        for t, _ in live:
            try:
                c0.append(time.clock_gettime_ns(t.clock))
            except OSError:
                c0.append(-1)
        w0 = _now()
        sleep(PROBE_NS // 1000)
        c1 = []
        for t, _ in live:
            try:
                c1.append(time.clock_gettime_ns(t.clock))
            except OSError:
                c1.append(-1)
        end = _now()
        if end - start > PROBE_SWITCH * sys.getswitchinterval() * 1e9:
            return
        w = end - w0
        for (t, _), a, b in zip(live, c0, c1):
            if a >= 0 and b >= a:
                tot = self.totals[t.native_id]
                tot[FREE] += min(b - a, w)
                tot[PROBED] += w
                tot[PROBES] += 1

    def take(self) -> Tuple[Dict[Any, List[int]], Dict[int, List[int]]]:
        """The stacks (keyed (native id, -1, name, raw stack)) and totals
        sampled since the last take."""
        with self._lock:
            totals, self.totals = self.totals, {}
        return self.fold.take(), totals


class Threads:
    """Threads' samples as the publishing thread keeps them: stacks as
    frame keys and totals by native id, for one stacks frame or a run."""

    def __init__(self) -> None:
        self.rows: Dict[Tuple[int, str, Tuple[_stacks.Frame, ...]], List[int]] = {}
        self.totals: Dict[int, List[int]] = {}

    def add(self, describer: _stacks.Describer, raw: Dict[Any, List[int]], totals: Dict[int, List[int]]) -> None:
        """Add what ThreadWatch.take returned."""
        for (nid, _, name, stack), (n, ns) in raw.items():
            self._add_row((nid, name, stack if stack == (_stacks.MORE,) else describer.frames(stack)), n, ns)
        self.merge_totals(totals)

    def _add_row(self, key: Tuple[int, str, Tuple[_stacks.Frame, ...]], n: int, ns: int) -> None:
        """Count a row; beyond MAX_RUN_ROWS rows, new stacks go to their
        thread's [more stacks] row."""
        row = self.rows.get(key)
        if row is None:
            if len(self.rows) >= _stacks.MAX_RUN_ROWS:
                key = (key[0], key[1], (_stacks.MORE,))
            row = self.rows.setdefault(key, [0, 0])
        row[0] += n
        row[1] += ns

    def merge_totals(self, totals: Dict[int, List[int]]) -> None:
        """Add totals by native id."""
        for nid, t in totals.items():
            have = self.totals.setdefault(nid, [0] * NTOTALS)
            for i, v in enumerate(t):
                have[i] += v

    def merge(self, other: "Threads") -> None:
        """Add every row and total of other."""
        for key, (n, ns) in other.rows.items():
            self._add_row(key, n, ns)
        self.merge_totals(other.totals)

    def __bool__(self) -> bool:
        return bool(self.totals)

    def entries(self, body: Dict[str, Any]) -> List[Dict[str, Any]]:
        """The threads field of a stacks frame whose body is body: one
        entry per thread, its stacks (the heaviest MAX_THREAD_ROWS, the
        rest in a [more stacks] row) indexing body's frames, which grow."""
        frames: List[Dict[str, Any]] = body.setdefault("frames", [])
        index = {(f["name"], f["file"], f["line"], f.get("lib", "")): i for i, f in enumerate(frames)}
        names: Dict[int, str] = {}
        by: Dict[int, List[Tuple[Tuple[_stacks.Frame, ...], List[int]]]] = {}
        for (nid, name, stack), row in self.rows.items():
            names[nid] = name
            by.setdefault(nid, []).append((stack, row))
        out = []
        for nid, tot in sorted(self.totals.items(), key=lambda kv: -kv[1][CPU]):
            rows = sorted(by.get(nid, []), key=lambda sr: -sr[1][1])
            kept, rest = rows[:MAX_THREAD_ROWS], rows[MAX_THREAD_ROWS:]
            if rest:
                kept.append(((_stacks.MORE,), [sum(r[0] for _, r in rest), sum(r[1] for _, r in rest)]))
            out_rows = []
            for stack, (n, ns) in kept:
                out_rows.append({"stack": [_frame_index(fr, index, frames) for fr in stack], "n": n, "ns": ns})
            out.append({"tid": nid, "name": names.get(nid, "")[:128], "cpu_ns": tot[CPU], "covered_ns": tot[COVERED],
                        "n": tot[SAMPLES], "free_ns": tot[FREE], "probed_ns": tot[PROBED], "probes": tot[PROBES],
                        "rows": out_rows})
        return out


def _frame_index(fr: _stacks.Frame, index: Dict[Tuple[str, str, int, str], int], frames: List[Dict[str, Any]]) -> int:
    i = index.get(fr)
    if i is None:
        i = index[fr] = len(frames)
        d: Dict[str, Any] = {"name": fr[0][:512], "file": fr[1][:512], "line": fr[2]}
        if fr[3]:
            d["lib"] = fr[3][:128]
        frames.append(d)
    return i


class TorchThreads:
    """torch's thread counts in this process, as stacks frame fields. Made
    on the training thread, which reads them; torch.set_num_threads and
    torch.set_num_interop_threads are wrapped to read them again after each
    call, on the calling thread: torch.get_num_threads() answers for the
    thread that asks (another thread keeps the count it first saw)."""

    def __init__(self, torch: Any) -> None:
        self.counts: Dict[str, int] = {}
        if torch is None:
            return
        self._read(torch)
        for setter in ("set_num_threads", "set_num_interop_threads"):
            fn = getattr(torch, setter, None)
            if callable(fn) and not getattr(fn, "_pipetop_wrapped", False):
                setattr(torch, setter, self._wrap(torch, fn))

    def _wrap(self, torch: Any, fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            out = fn(*args, **kwargs)
            self._read(torch)
            return out

        wrapped._pipetop_wrapped = True  # type: ignore[attr-defined]
        return wrapped

    def _read(self, torch: Any) -> None:
        counts = {}
        for key, fn in (("intra_op_threads", "get_num_threads"), ("inter_op_threads", "get_num_interop_threads")):
            try:
                n = int(getattr(torch, fn)())
            except Exception:  # noqa: BLE001 - a partial torch, a mock
                continue
            if n > 0:
                counts[key] = n
        self.counts = counts
