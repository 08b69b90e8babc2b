"""Stack samples: a daemon thread that reads one thread's Python stack a
fixed number of times a second (``PIPETOP_STACKS_HZ``, default 100, 0 = off)
with ``sys._current_frames()`` and folds each stack into a table keyed by
(role, worker, stage, frames), so that nothing is sent per sample. In the
training process the same tick samples the process's other Python threads
(``pythreads``).

Under ``pipetop run`` pipetop reads the stacks from outside the process
instead (``stageword``); this sampler then idles, and takes over only if a
viewer says that read is refused.

Each sample stands for the wall time since the sampler's previous one. The
sampler needs the GIL to read a stack: while the sampled thread runs Python
code, the sample waits up to the interpreter's switch interval (5 ms); while
it is inside C code that holds the GIL (a decompressor that does not release
it), the sample waits until the call returns and then lands on the Python
frame that made the call, with the whole wait as its weight. That frame is
where the user can act, so the time is charged to it rather than lost.

That wait is also a bias: a sample due while the thread runs Python code
lands where the thread next lets go of the GIL (a blocking call, most torch
operations) or where the interpreter forces a switch, whichever comes
first. Python code that runs for less than the switch interval before such
a call is charged to that call's line. While sampling, pipetop therefore
lowers the interpreter's switch interval from Python's default 5 ms
(``sys.setswitchinterval``) to 0.2 ms in DataLoader workers (where only the
fetch runs Python) and to 1 ms in the training process (which may run
other Python threads, and where each forced switch costs the training
thread a GIL hand-over each way); an interval the program set itself is
left alone. Without it, a logging function of a few milliseconds called
between two steps is charged to the first torch call after it.

The frames of this package (the instrumentation's wrappers) are left out of
every stack.
"""

from __future__ import annotations

import json
import os
import site
import sys
import sysconfig
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

from . import stageword as _stageword

HZ_ENV = "PIPETOP_STACKS_HZ"
DEFAULT_HZ = 100.0
MAX_HZ = 1000.0
MAX_DEPTH = 128  # frames kept per stack (the innermost ones)
MAX_ROWS = 1024  # rows of a stacks frame or of a worker's message
MAX_RUN_ROWS = 4096  # rows kept for the whole run
MAX_FRAME_BYTES = 768 << 10  # a stacks frame stays this far below the protocol's 1 MiB cap
MAX_WEIGHT_NS = 1_000_000_000  # the most wall time one sample stands for
IDLE_POLL = 1.0  # seconds between looks at stageword.inside() while pipetop reads from outside
MORE = ("[more stacks]", "", 0, "(more)")  # the frame of the row that holds what did not fit
TRAIN = "train"  # the role of the training thread
WORKER_LOOP, WORKER_LOOP_FILE = "_worker_loop", os.path.join("torch", "utils", "data", "_utils", "worker.py")
WORKER = "worker"  # the role of a DataLoader worker's fetch

PYTHON_SWITCH = 0.005  # Python's default switch interval, seconds
WORKER_SWITCH = 0.0002  # the switch interval while a DataLoader worker is sampled
TRAIN_SWITCH = 0.001  # the switch interval while the training process is sampled
COMM_LEN = 15  # the kernel's limit on a thread's name
# Modules whose presence stops the sampling on CPython 3.11: walking the
# frames of a thread that decodes with PyAV crashed 1 run in 8 to 12 of a
# 2-worker video loader (a frame object freed under the walk: a segfault,
# or "'dict' object has no attribute 'f_code'"), with or without the video
# counting; never with the sampling off. With h5py, 2 runs in 10 of a
# 2-worker HDF5 loader sampled 1,000 times a second (a worker's segfault,
# or an h5py DatasetID where f_back should be a frame). 3.11 is the first
# CPython whose frames are made lazily, and the only one checked.
UNSAFE_MODULES = ("av", "h5py") if sys.version_info[:2] == (3, 11) else ()

_now = time.perf_counter_ns

# A frame as sent: (name, file, line, lib); lib is "" for the user's code,
# else the top-level package (or stdlib module) the file belongs to.
Frame = Tuple[str, str, int, str]
# A row's key: (role, worker or -1, stage or "", frames root first).
Key = Tuple[str, int, str, Tuple[Frame, ...]]


def name_os_thread(name: str, native_id: Optional[int] = None) -> None:
    """Set the OS name of a thread of this process (the calling thread by
    default) to name, cut to the kernel's 15 bytes, so that a viewer
    reading /proc tells pipetop's threads from the run's; errors are
    ignored."""
    path = "/proc/thread-self/comm" if native_id is None else "/proc/self/task/%d/comm" % native_id
    try:
        with open(path, "w") as f:
            f.write(name.encode("ascii", "replace").decode()[:COMM_LEN])
    except OSError:
        pass


def hz(env: Optional[Dict[str, str]] = None) -> float:
    """The sampling rate PIPETOP_STACKS_HZ asks for: 0 switches the stack
    sampler off; anything unreadable is the default."""
    raw = (os.environ if env is None else env).get(HZ_ENV, "").strip()
    if not raw:
        return DEFAULT_HZ
    try:
        v = float(raw)
    except ValueError:
        return DEFAULT_HZ
    if v != v or v < 0:  # NaN or negative
        return DEFAULT_HZ
    return min(v, MAX_HZ)


_switch_set: Optional[float] = None  # the interval tighten_switch set (a forked child inherits both)


def tighten_switch(seconds: float) -> None:
    """Lower the interpreter's switch interval to seconds, so that samples
    land within that long of when they are due; an interval the program
    set itself (neither Python's default nor one set here) is left alone."""
    global _switch_set
    now = sys.getswitchinterval()
    if abs(now - PYTHON_SWITCH) < 1e-9 or (_switch_set is not None and abs(now - _switch_set) < 1e-9):
        sys.setswitchinterval(seconds)
        _switch_set = sys.getswitchinterval()


class Files:
    """Tells the user's files from libraries' and shortens paths for
    display: ``zarr/core.py`` for a package, ``train.py`` for a file under
    the working directory."""

    def __init__(self) -> None:
        roots = []
        try:
            roots += site.getsitepackages()
        except Exception:  # noqa: BLE001 - virtualenvs without it
            pass
        try:
            roots.append(site.getusersitepackages())
        except Exception:  # noqa: BLE001
            pass
        self._libs = sorted({os.path.join(os.path.abspath(r), "") for r in roots if r}, key=len, reverse=True)
        paths = sysconfig.get_paths()
        self._std = sorted({os.path.join(os.path.abspath(paths[k]), "") for k in ("stdlib", "platstdlib") if paths.get(k)},
                           key=len, reverse=True)
        self._own = os.path.join(os.path.dirname(os.path.abspath(__file__)), "")
        self._cwd = os.path.join(os.getcwd(), "")
        self._cache: Dict[str, Optional[Tuple[str, str]]] = {}

    def describe(self, filename: str) -> Optional[Tuple[str, str]]:
        """(short file, lib) of a code object's file; None for this
        package's own files, which samples leave out."""
        got = self._cache.get(filename, False)
        if got is not False:
            return got  # type: ignore[return-value]
        out = self._describe(filename)
        if len(self._cache) < 65536:
            self._cache[filename] = out
        return out

    def _describe(self, filename: str) -> Optional[Tuple[str, str]]:
        if filename.startswith("<"):
            # <frozen importlib._bootstrap>, <string>, <stdin>
            inner = filename.strip("<>")
            if inner.startswith("frozen "):
                return filename, inner[len("frozen "):].split(".")[0]
            return filename, ""
        path = os.path.abspath(filename)
        if path.startswith(self._own):
            return None
        for root in self._libs:
            if path.startswith(root):
                return _lib(path[len(root):])
        for marker in ("/site-packages/", "/dist-packages/"):
            i = path.rfind(marker)
            if i >= 0:
                return _lib(path[i + len(marker):])
        for root in self._std:
            if path.startswith(root):
                return _lib(path[len(root):])
        if path.startswith(self._cwd):
            return path[len(self._cwd):], ""
        return path, ""


def _lib(rel: str) -> Tuple[str, str]:
    top = rel.split("/", 1)[0]
    if top.endswith(".py"):
        top = top[:-3]
    return rel, top or "python"


class Fold:
    """Folded samples: key -> [samples, ns]. The sampler thread adds, the
    publishing thread takes; a lock keeps the two apart."""

    def __init__(self, cap: int = MAX_RUN_ROWS) -> None:
        self.rows: Dict[Any, List[int]] = {}
        self.cap = cap
        self._lock = threading.Lock()

    def add(self, key: Any, n: int, ns: int) -> None:
        """Count n samples standing for ns nanoseconds at key; beyond cap
        rows, new stacks go to their role's and stage's [more stacks] row."""
        with self._lock:
            row = self.rows.get(key)
            if row is None:
                if len(self.rows) >= self.cap:
                    key = (key[0], key[1], key[2], (MORE,))
                    row = self.rows.get(key)
                if row is None:
                    row = self.rows[key] = [0, 0]
            row[0] += n
            row[1] += ns

    def take(self) -> Dict[Any, List[int]]:
        """The rows added since the last take; the table starts empty."""
        with self._lock:
            rows, self.rows = self.rows, {}
        return rows

    def merge(self, rows: Dict[Any, List[int]]) -> None:
        """Add every row of rows."""
        for key, (n, ns) in rows.items():
            self.add(key, n, ns)

    def snapshot(self) -> Dict[Any, List[int]]:
        """A copy of the rows (the table keeps them)."""
        with self._lock:
            return {k: list(v) for k, v in self.rows.items()}


class Describer:
    """Turns code-object keys into frame keys (names, short files, lines),
    caching one description per code object."""

    def __init__(self, files: Optional[Files] = None) -> None:
        self.files = files or Files()
        self._code: Dict[Any, Optional[Tuple[str, str, str]]] = {}

    def frames(self, raw: Tuple[Tuple[Any, int], ...]) -> Tuple[Frame, ...]:
        """The frames of a sampled stack (innermost first, as sampled),
        root first, this package's left out. A DataLoader worker's stack
        starts at torch's worker loop: a forked worker's main thread also
        holds the frames of the parent that forked it, which it never
        returns to."""
        for i, (code, _) in enumerate(raw):
            if code.co_name == WORKER_LOOP and code.co_filename.endswith(WORKER_LOOP_FILE):
                raw = raw[:i + 1]
                break
        out: List[Frame] = []
        for code, line in reversed(raw):
            d = self._code.get(code, False)
            if d is False:
                d = self._describe(code)
                if len(self._code) < 65536:
                    self._code[code] = d
            if d is not None:
                out.append((d[0], d[1], line or 0, d[2]))
        return tuple(out)

    def _describe(self, code: Any) -> Optional[Tuple[str, str, str]]:
        where = self.files.describe(code.co_filename)
        if where is None:
            return None
        name = getattr(code, "co_qualname", None) or code.co_name
        return name, where[0], where[1]

    def rows(self, raw: Dict[Any, List[int]]) -> Dict[Key, List[int]]:
        """Sampled rows (role, worker, stage, sampled stack) as frame
        keys; stacks that differ only in this package's frames merge."""
        out: Dict[Key, List[int]] = {}
        for (role, worker, stage, stack), (n, ns) in raw.items():
            key = (role, worker, stage, self.frames(stack))
            row = out.get(key)
            if row is None:
                out[key] = [n, ns]
            else:
                row[0] += n
                row[1] += ns
        return out


class StackSampler:
    """Samples the stack of one thread of this process, while
    stageword.inside() says pipetop does not read it from outside (the
    interpreter's switch interval is lowered at the first sample).

    Args:
        tid: the thread's ident.
        role: TRAIN or WORKER.
        worker: the worker's id (-1 for the training thread).
        where: called at each sample on the sampler thread; returns the
            stage the thread is in ("" when the role has none), or None
            to skip the sample (a worker between fetches).
        rate: samples per second.
    """

    def __init__(self, tid: int, role: str, worker: int, where: Callable[[], Optional[str]], rate: float) -> None:
        self.tid = tid
        self.role = role
        self.switch = TRAIN_SWITCH if role == TRAIN else WORKER_SWITCH
        self.worker = worker
        self.where = where
        self.period = 1.0 / rate
        self.fold = Fold(cap=MAX_RUN_ROWS)
        self.samples = 0
        # others samples the process's other Python threads at each tick
        # (pythreads.ThreadWatch); None in workers.
        self.others: Any = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="pipetop-stacks", daemon=True)

    def start(self) -> None:
        """Start sampling."""
        self._thread.start()

    def stop(self) -> None:
        """Stop sampling (the thread ends at its next wake-up)."""
        self._stop.set()

    def _run(self) -> None:
        name_os_thread(self._thread.name)
        period, stopped, inside = self.period, self._stop.is_set, _stageword.inside
        last = _now()
        tightened = False
        try:
            while not stopped():
                if not inside():
                    # pipetop reads the stacks from outside: a wake-up a
                    # second (not one a sample, which would take the GIL
                    # from the training thread each time) sees a refusal.
                    time.sleep(IDLE_POLL)
                    last = _now()
                    continue
                time.sleep(period)
                now = _now()
                ns, last = min(now - last, MAX_WEIGHT_NS), now
                if unsafe():
                    return
                if not tightened:
                    tightened = True
                    tighten_switch(self.switch)
                self.sample(ns)
        except Exception as e:  # noqa: BLE001 - samples are optional; the run goes on
            sys.stderr.write("pipetop: stack samples stopped: %r\n" % (e,))

    def sample(self, ns: int) -> None:
        """Take one sample standing for ns nanoseconds."""
        stage = self.where()
        if stage is None:
            return
        frames = sys._current_frames()
        f = frames.get(self.tid)
        stack = []
        while f is not None and len(stack) < MAX_DEPTH:
            stack.append((f.f_code, f.f_lineno))
            f = f.f_back
        others = self.others.stacks(frames) if self.others is not None else None
        # No frame object of another thread may outlive this point: see
        # pythreads.ThreadWatch.stacks.
        del frames, f
        if stack:
            self.fold.add((self.role, self.worker, stage, tuple(stack)), 1, ns)
            self.samples += 1
        if others is not None:
            # After the training thread's stack: by then a thread that
            # handed this one the GIL is back waiting for it.
            self.others.sample(others, ns)


def unsafe() -> bool:
    """Whether this process imported a module whose threads' frames must
    not be walked (UNSAFE_MODULES); says so on stderr once."""
    for name in UNSAFE_MODULES:
        if name in sys.modules:
            global _unsafe_said
            if not _unsafe_said:
                _unsafe_said = True
                sys.stderr.write("pipetop: stack samples off: %s is imported, and walking the stacks of its "
                                 "threads crashed CPython %d.%d (docs/python.md)\n" % ((name,) + sys.version_info[:2]))
            return True
    return False


# Whether unsafe() said so, here or in the parent of this forked process.
_unsafe_said = False


def _forked() -> None:
    """A forked child (a DataLoader worker) whose parent had imported an
    unsafe module leaves saying so to the parent: one line per run, not
    one per worker."""
    global _unsafe_said
    if any(name in sys.modules for name in UNSAFE_MODULES):
        _unsafe_said = True


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forked)


def payload(rows: Dict[Key, List[int]], t_ns: int, interval_ns: int, rate: float, max_rows: int = MAX_ROWS) -> Dict[str, Any]:
    """The body of a stacks frame (docs/protocol.md) for folded rows: a
    frame table and rows of frame indices, the largest rows first; rows
    beyond max_rows are merged into their role's [more stacks] row, so the
    samples still add up."""
    ordered = sorted(rows.items(), key=lambda kv: -kv[1][1])
    kept = dict(ordered[:max_rows])
    for key, (n, ns) in ordered[max_rows:]:
        more = (key[0], key[1], key[2], (MORE,))
        row = kept.setdefault(more, [0, 0])
        row[0] += n
        row[1] += ns
    index: Dict[Frame, int] = {}
    frames: List[Dict[str, Any]] = []
    out_rows = []
    for (role, worker, stage, stack), (n, ns) in kept.items():
        ids = []
        for fr in stack:
            i = index.get(fr)
            if i is None:
                i = index[fr] = len(frames)
                d: Dict[str, Any] = {"name": fr[0][:512], "file": fr[1][:512], "line": fr[2]}
                if fr[3]:
                    d["lib"] = fr[3][:128]
                frames.append(d)
            ids.append(i)
        row: Dict[str, Any] = {"role": role, "stack": ids, "n": n, "ns": ns}
        if worker >= 0:
            row["worker"] = worker
        if stage:
            row["stage"] = stage
        out_rows.append(row)
    return {"t": t_ns, "interval_ns": interval_ns, "hz": rate, "frames": frames, "rows": out_rows}


def fitted(rows: Dict[Key, List[int]], t_ns: int, interval_ns: int, rate: float, limit: int,
           extra: Optional[Dict[str, Any]] = None) -> Tuple[Dict[str, Any], bytes]:
    """payload() of rows (with extra fields) and its JSON, with as many rows
    as keep the JSON within limit bytes."""
    keep = MAX_ROWS
    while True:
        body = payload(rows, t_ns, interval_ns, rate, max_rows=keep)
        if extra:
            body.update(extra)
        data = json.dumps(body, separators=(",", ":")).encode()
        if len(data) <= limit or keep <= 1:
            return body, data
        keep //= 4


def rows_of(body: Dict[str, Any]) -> Dict[Key, List[int]]:
    """The rows of a payload as frame keys (what a worker sent)."""
    frames = [(str(f.get("name", "")), str(f.get("file", "")), int(f.get("line", 0)), str(f.get("lib", "")))
              for f in body.get("frames", [])]
    out: Dict[Key, List[int]] = {}
    for r in body.get("rows", []):
        stack = tuple(frames[i] for i in r.get("stack", []) if 0 <= i < len(frames))
        key = (str(r.get("role", "")), int(r.get("worker", -1)), str(r.get("stage", "")), stack)
        row = out.setdefault(key, [0, 0])
        row[0] += int(r.get("n", 0))
        row[1] += int(r.get("ns", 0))
    return out
