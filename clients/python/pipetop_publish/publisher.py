"""The hot path of a publisher: stage spans and step records on the
training thread, queued for the server thread."""

from __future__ import annotations

import atexit
import collections
import json
import os
import threading
import time
import weakref
from typing import Any, Deque, Dict, List, Optional, Sequence, Tuple

from .gputimer import GpuTimer
from .identity import host_pid, process_start_ns, who
from .server import Server
from .sockets import socket_dir, socket_name
from .stages import CANONICAL, OTHER
from .wire import MAX_STAGES, encode_config

MAX_MSG = 4096  # longest event message, in characters
RECENT_STEPS = 4096  # step records the run summary keeps for the pattern of its pauses
TIMELINE_NS = 1_000_000_000  # the run timeline's first interval (doubled to keep TIMELINE_POINTS)
TIMELINE_POINTS = 64
_NOT_STEPS = ("event", "loader", "stacks")  # queued items that are not step records
_INT32_MAX = (1 << 31) - 1  # the wire sample count is an int32


class _Span:
    """A context manager timing one stage; made by Publisher.stage."""

    __slots__ = ("_pub", "_idx", "_name", "_start", "_child", "_outer", "_gpu")

    def __init__(self, pub: "Publisher", idx: int, name: str) -> None:
        self._pub = pub
        self._idx = idx
        self._name = name
        self._child = 0
        self._outer: Optional[_Span] = None
        self._gpu: Any = None

    def __enter__(self) -> "_Span":
        pub = self._pub
        self._outer = pub._open
        pub._open = self
        if pub._gpu is not None and self._idx >= 0:
            self._gpu = pub._gpu.begin()
        self._start = time.perf_counter_ns()
        pub._where = (self._name, self._start)  # one attribute store: read by the server thread
        return self

    def __exit__(self, *exc: Any) -> None:
        now = time.perf_counter_ns()
        d = now - self._start
        pub = self._pub
        pub._open = self._outer
        pub._where = (self._outer._name if self._outer is not None else OTHER, now)
        if self._outer is not None:
            self._outer._child += d
        if self._idx >= 0:
            # Time spent in nested spans belongs to those spans.
            pub._cpu[self._idx] += max(0, d - self._child)
            if self._gpu is not None:
                pub._gpu.end(self._gpu, self._idx)


class Publisher:
    """Publishes a training loop's per-stage step times over a Unix socket.

    Args:
        name: the trainer name shown by ``pipetop ls``; part of the socket name.
        config: free-form JSON-able configuration sent to every viewer.
        stages: stage names declared up front (default: the canonical ones).
            Names used later with ``stage()`` are added on the fly; "other"
            is always present and gets the step time no span covered.
        cuda: also time stages on the GPU with CUDA event pairs (needs torch
            with CUDA; otherwise a warning event says it is off).
        socket_path: exact socket path; default ``socket_dir()/NAME.PID.sock``.
        pending: step records buffered between flushes; the oldest are
            dropped (and counted) beyond that.
        viewer_queue: frames queued per viewer before frames are dropped.
        flush_interval: seconds between flushes of batched steps.
        max_gpu_lag: steps a record waits for its CUDA events before it is
            published without GPU times.
        stage_word: the hello's ``stage_word`` (stageword.setup): pipetop
            reads this process's stacks from outside; None: it does not.

    Only the training thread should call ``stage``, ``step`` and
    ``begin_step``. ``event`` and ``close`` may be called from any thread.
    """

    def __init__(
        self,
        name: str = "python",
        config: Optional[Dict[str, Any]] = None,
        *,
        stages: Sequence[str] = CANONICAL,
        cuda: bool = False,
        socket_path: Optional[str] = None,
        pending: int = 8192,
        viewer_queue: int = 256,
        flush_interval: float = 0.05,
        max_gpu_lag: int = 16,
        stage_word: Optional[Dict[str, Any]] = None,
    ) -> None:
        self.name = name
        self._pid = os.getpid()
        self._names: Tuple[str, ...] = _order(list(stages) + [OTHER])
        if len(self._names) > MAX_STAGES:
            raise ValueError("pipetop: %d stages declared, at most %d" % (len(self._names), MAX_STAGES))
        self._index: Dict[str, int] = {n: i for i, n in enumerate(self._names)}
        self._cpu: List[int] = [0] * len(self._names)
        self._open: Optional[_Span] = None
        self._step_no = 0
        self._step_start: Optional[int] = None  # perf_counter_ns of the step start
        self._where: Optional[Tuple[str, int]] = None  # the stage the loop is in, since (perf_counter_ns)
        # Step times are monotonic clock readings shifted onto Unix time.
        self._base = time.time_ns() - time.perf_counter_ns()
        self._too_many: set = set()
        # Whole-run totals for summary(): CPU ns per stage (indexed like
        # self._names), summed step wall time, samples.
        self._totals: List[int] = [0] * len(self._names)
        self._run_wall = 0
        self._run_samples = 0
        self._first: Optional[Tuple[int, Tuple[int, ...], Tuple[str, ...]]] = None
        # The run over time: the totals so far at each TIMELINE interval's
        # boundary (Unix ns, a multiple of the interval, so that the ranks
        # of a run mark the same instants).
        self._timeline: List[Dict[str, Any]] = []
        # The newest step records, for the pattern of the run's pauses in
        # its summary (a pause every N steps).
        self._recent: Deque[Any] = collections.deque(maxlen=RECENT_STEPS)
        self._mark_ns = TIMELINE_NS
        self._next_mark = 0
        self._queue: Deque[Any] = collections.deque()
        self._pending_max = pending
        self._qlock = threading.Lock()
        self._overflow = 0
        self._published = 0
        self._closed = False
        self._gpu: Optional[GpuTimer] = GpuTimer.for_torch(max_gpu_lag) if cuda else None
        hello = {
            "role": "trainer",
            "name": name,
            "pid": self._pid,
            "host_pid": host_pid(),
            "start_ns": process_start_ns(),
            # The thread that opens the publisher runs the training loop
            # (pipetop run opens it there): viewers tell it from the
            # intra-op pools by this id.
            "tid": threading.get_native_id(),
        }
        # Who this rank is, read once: torch.distributed may be torn down
        # before the end-of-run summary needs it.
        self.rank_of: Dict[str, Any] = who(os.environ)
        hello.update({k: v for k, v in self.rank_of.items() if k in ("rank", "world_size", "run")})
        cfg = encode_config(config)
        if cfg is not None:
            hello["config"] = cfg
        if stage_word is not None:
            # pipetop reads this process's stacks from outside
            # (stageword): where the stage word is, what its codes mean.
            hello["stage_word"] = stage_word
        path = socket_path or os.path.join(socket_dir(), socket_name(name, self._pid))
        self._server = Server(path, hello, self._names, self._drain, viewer_queue, flush_interval, self._progress)
        self.path = path
        _register(self)
        if cuda and self._gpu is None:
            self.event("warning", "CUDA timing requested but torch with CUDA is not available; CPU times only")

    # -- hot path -----------------------------------------------------------

    def stage(self, name: str) -> _Span:
        """Return a context manager that times the named stage of this step.

        Time spent inside a nested span counts for the inner stage only.
        A name not seen before is added to the stage list (at most 16
        stages; beyond that the time stays in "other" and a warning event
        is sent once).
        """
        if self._step_start is None:
            self._step_start = time.perf_counter_ns()
        idx = self._index.get(name)
        if idx is None:
            idx = self._add_stage(name)
        return _Span(self, idx, name)

    def step(self, samples: int = 0, loss: Any = None) -> None:
        """End the current step; the next one starts now.

        Args:
            samples: samples processed in this step.
            loss: a float, or a 0-dim torch tensor. A CPU tensor is read
                right away; a CUDA tensor is read only when CUDA timing is
                on, from an asynchronous copy once it has finished (never a
                synchronizing ``.item()``); otherwise it is left out.
        """
        self._end_step(time.perf_counter_ns(), samples, loss)

    def _end_step(self, now: int, samples: int, loss: Any) -> None:
        """End the current step at ``now`` (a perf_counter_ns reading)."""
        start = self._step_start if self._step_start is not None else now
        wall = now - start
        cpu = self._cpu
        other = self._index[OTHER]
        cpu[other] = 0
        cpu[other] = max(0, wall - sum(cpu))
        tot = self._totals
        if len(tot) != len(cpu):
            tot.extend([0] * (len(cpu) - len(tot)))
        for i, v in enumerate(cpu):
            tot[i] += v
        self._run_wall += wall
        self._run_samples += max(0, int(samples))
        if self._step_no == 0:
            # The first step carries the start-up (loader workers, lazy
            # initialization); the summary reports it apart as well.
            self._first = (wall, tuple(cpu), self._names)
        value, deferred = _loss_value(loss, self._gpu is not None)
        n = min(max(0, int(samples)), _INT32_MAX)
        rec = (self._step_no, self._base + start, self._base + now, n, value, tuple(cpu), None, self._names)
        self._recent.append(rec)
        self._step_no += 1
        if self._base + now >= self._next_mark:
            self._mark(self._base + now)
        for i in range(len(cpu)):
            cpu[i] = 0
        self._step_start = now  # steps tile the timeline: this one's cost is the next one's "other"
        self._where = (OTHER, now)
        if self._gpu is None:
            self._push(rec)
            return
        for r in self._gpu.end_step(rec, deferred):
            self._push(r)

    def _mark(self, t: int) -> None:
        """Add the totals so far to the timeline at the interval boundary
        before t; beyond TIMELINE_POINTS, every other point goes and the
        interval doubles."""
        at = t - t % self._mark_ns
        if self._next_mark:  # the first step only sets the first boundary
            self._timeline.append({"t": at, "steps": self._step_no, "wall_ns": self._run_wall,
                                   "stages": {n: self._totals[i] for i, n in enumerate(self._names)}})
        if len(self._timeline) > TIMELINE_POINTS:
            self._mark_ns *= 2
            self._timeline = [p for p in self._timeline if p["t"] % self._mark_ns == 0]
            at = t - t % self._mark_ns
        self._next_mark = at + self._mark_ns

    def begin_step(self) -> None:
        """Restart the current step now, discarding the time since the last
        ``step()`` (e.g. after an evaluation pass or a checkpoint)."""
        for i in range(len(self._cpu)):
            self._cpu[i] = 0
        if self._gpu is not None:
            self._gpu.discard_open()
        self._step_start = time.perf_counter_ns()
        self._where = (OTHER, self._step_start)

    def event(self, kind: str, msg: str = "") -> None:
        """Send a one-off event (checkpoint, epoch, warning, ...) to viewers."""
        self._push(("event", time.time_ns(), str(kind), str(msg)[:MAX_MSG]))

    def loader(self, stats: Dict[str, Any]) -> None:
        """Send the data loader's statistics (a ``loader`` frame, see
        docs/protocol.md); the latest one also greets later viewers.
        ``t`` is filled in when missing."""
        stats = dict(stats)
        stats.setdefault("t", time.time_ns())
        self._push(("loader", stats))

    def stacks(self, body: Dict[str, Any]) -> None:
        """Send folded stack samples (a ``stacks`` frame, docs/protocol.md)
        to the viewers that accept them, and to the recording."""
        self._push(("stacks", body))

    def summary(self) -> Dict[str, Any]:
        """Return the whole run so far: steps, samples, summed step wall
        time and CPU time per stage (ns), in stage-list order, and the same
        for the first step alone (None before it ended)."""
        first = None
        if self._first is not None:
            wall, cpu, names = self._first
            first = {"wall_ns": wall, "stages": [{"name": n, "cpu_ns": cpu[i]} for i, n in enumerate(names)]}
        return {
            "steps": self._step_no,
            "samples": self._run_samples,
            "wall_ns": self._run_wall,
            "stages": [{"name": n, "cpu_ns": self._totals[i] if i < len(self._totals) else 0} for i, n in enumerate(self._names)],
            "first_step": first,
            "timeline": list(self._timeline),
            "recent": self._recent_steps(),
        }

    def _recent_steps(self) -> Dict[str, Any]:
        """The newest step records (at most RECENT_STEPS) as the stage
        list now and one row a step: step, start and end (Unix ns), then
        each stage's CPU ns in that list's order (0 for a stage the step
        did not have)."""
        names = self._names
        rows = []
        for step, t0, t1, _, _, cpu, _, had in list(self._recent):
            at = dict(zip(had, cpu))
            rows.append([step, t0, t1] + [at.get(n, 0) for n in names])
        return {"names": list(names), "steps": rows}

    def _push(self, item: Any) -> None:
        if self._closed or os.getpid() != self._pid:
            return
        with self._qlock:
            if len(self._queue) >= self._pending_max:
                self._queue.popleft()
                self._overflow += 1
            self._queue.append(item)
            if item[0] not in _NOT_STEPS:
                self._published += 1

    def _add_stage(self, name: str) -> int:
        if not isinstance(name, str) or not name:
            raise ValueError("pipetop: stage name must be a non-empty string, got %r" % (name,))
        if len(self._names) >= MAX_STAGES:
            if name not in self._too_many:
                self._too_many.add(name)
                self.event("warning", "stage %r ignored: at most %d stages; its time counts as other" % (name, MAX_STAGES))
            return -1
        old = self._names
        self._names = _order(list(old) + [name])
        self._index = {n: i for i, n in enumerate(self._names)}
        moved = [0] * len(self._names)
        for i, n in enumerate(old):
            moved[self._index[n]] = self._cpu[i]
        self._cpu = moved
        tot = [0] * len(self._names)
        for i, n in enumerate(old):
            if i < len(self._totals):
                tot[self._index[n]] = self._totals[i]
        self._totals = tot
        if self._gpu is not None:
            self._gpu.remap(old, self._index)
        return self._index[name]

    # -- background side ------------------------------------------------------

    def _progress(self) -> Dict[str, Any]:
        """Where the loop is now, for progress frames; called by the server
        thread (it only reads attributes the loop replaces whole)."""
        where, start, done = self._where, self._step_start, self._step_no
        p: Dict[str, Any] = {"t": time.time_ns(), "step": done if start is not None else -1, "done": done}
        if start is not None:
            p["step_t0"] = self._base + start
        if where is not None:
            p["stage"], p["since"] = where[0], self._base + where[1]
        return p

    def _drain(self) -> List[Any]:
        """Take every queued item; called by the server thread."""
        with self._qlock:
            items = list(self._queue)
            self._queue.clear()
            return items

    # -- lifecycle --------------------------------------------------------------

    def stats(self) -> Dict[str, int]:
        """Return counters: viewers attached now, accepted, refused, frames
        dropped for slow viewers, steps dropped before sending (overflow),
        steps published, viewers whose socket buffer is full now, and
        unexpected errors of the background thread."""
        s = self._server.stats()
        with self._qlock:
            s["overflow"] = self._overflow
            s["published"] = self._published
        return s

    def close(self, timeout: float = 1.0) -> None:
        """Publish what is pending (waiting up to ``timeout`` seconds for
        viewers that read), disconnect the viewers and remove the socket."""
        if self._closed:
            return
        if os.getpid() != self._pid:
            self._closed = True
            return
        if self._gpu is not None:
            for r in self._gpu.flush():
                self._push(r)
        self._closed = True
        self._server.close(timeout)
        self._write_stats()

    def _write_stats(self) -> None:
        """With PIPETOP_STATS_FILE set, append one JSON line of this
        publisher's counters (stats(): viewers accepted over its life, ...)
        to that file: how many viewers attached, for tests and debugging."""
        path = os.environ.get("PIPETOP_STATS_FILE")
        if not path:
            return
        line = json.dumps(dict(self.stats(), pid=self._pid, name=self.name))
        try:
            with open(path, "a", encoding="utf-8") as f:
                f.write(line + "\n")
        except OSError:
            pass  # a debugging aid never fails the run

    def __enter__(self) -> "Publisher":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _after_fork(self) -> None:
        """In a forked child (e.g. a DataLoader worker) drop the parent's
        sockets so that viewers still see the trainer go away."""
        self._closed = True
        self._server.forget()


def _order(names: List[str]) -> Tuple[str, ...]:
    """Canonical stages first (in canonical order), then custom ones in
    order of appearance, then "other"; duplicates removed."""
    seen: Dict[str, None] = {}
    for n in names:
        if not isinstance(n, str) or not n:
            raise ValueError("pipetop: stage name must be a non-empty string, got %r" % (n,))
        seen.setdefault(n, None)
    canon = [n for n in CANONICAL if n in seen and n != OTHER]
    custom = [n for n in seen if n not in CANONICAL]
    return tuple(canon + custom + [OTHER])


def _loss_value(loss: Any, cuda_timing: bool) -> Tuple[Optional[float], Any]:
    """Return (loss now, or None; a CUDA tensor to read later, or None)."""
    if loss is None:
        return None, None
    if isinstance(loss, (float, int)):
        return float(loss), None
    is_cuda = getattr(loss, "is_cuda", None)
    if is_cuda is None:
        try:
            return float(loss), None  # numpy scalars and the like
        except (TypeError, ValueError):
            return None, None
    if is_cuda:
        return None, (loss if cuda_timing else None)
    try:
        if loss.numel() != 1:
            return None, None
        return float(loss.detach()), None
    except (TypeError, ValueError, RuntimeError):
        return None, None



# ---------------------------------------------------------------------------
# Process-wide bookkeeping: close at exit, forget sockets in forked children.

_live: "weakref.WeakSet[Publisher]" = weakref.WeakSet()


def _register(pub: Publisher) -> None:
    _live.add(pub)


def _close_all() -> None:
    for pub in list(_live):
        try:
            pub.close(timeout=0.5)
        except Exception:  # noqa: BLE001 - never fail interpreter exit
            pass


def _child_after_fork() -> None:
    for pub in list(_live):
        pub._after_fork()


atexit.register(_close_all)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_child_after_fork)
