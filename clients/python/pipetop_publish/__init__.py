"""Publish the stage timings of a Python training loop to pipetop.

This module speaks pipetop's protocol v1 (docs/protocol.md) as a trainer: it
listens on a Unix socket, and any number of pipetop viewers attach to it. It
uses only the standard library (Python 3.9+); torch is used only when you ask
for CUDA event timing.

Usage::

    from pipetop_publish import Publisher

    with Publisher(name="my-run", config={"batch": 64}) as pub:
        for batch in loader_iter:             # time spent here is "other"
            with pub.stage("forward"):
                loss = model(batch)
            with pub.stage("backward"):
                loss.backward()
            pub.step(samples=64, loss=loss)   # ends the step

The training loop never waits on a viewer: ``stage`` and ``step`` only append
to a bounded in-memory queue, and a daemon thread encodes and sends frames
with non-blocking sockets. A viewer that stops reading loses whole frames
(counted and reported to it), never the loop's time.
"""

from __future__ import annotations

import atexit
import collections
import json
import math
import os
import selectors
import socket
import struct
import sys
import threading
import time
import weakref
from typing import Any, Callable, Deque, Dict, List, Optional, Sequence, Tuple

from .record import Recording

__all__ = [
    "CANONICAL",
    "MAX_FRAME",
    "MAX_STAGES",
    "PROTOCOL_VERSION",
    "Publisher",
    "ProtocolError",
    "check_peer",
    "decode_viewer_line",
    "rank_fields",
    "socket_dir",
    "socket_name",
]

#: Protocol version spoken by this module.
PROTOCOL_VERSION = 1
#: Largest frame, newline included, either side accepts.
MAX_FRAME = 1 << 20
#: Most stages one step record can carry ("other" included).
MAX_STAGES = 16
#: Canonical stage names in critical-path order; they get fixed colours.
CANONICAL: Tuple[str, ...] = (
    "data_wait",
    "h2d",
    "forward",
    "backward",
    "optim",
    "sync",
    "other",
)
OTHER = "other"

_STEPS_PER_FRAME = 512  # keeps a steps frame far below MAX_FRAME
_MAX_MSG = 4096  # longest event message, in characters
PROGRESS_INTERVAL = 1.0  # seconds between progress frames
_MAX_CONFIG = 64 << 10  # largest encoded config carried in the hello
_UCRED = struct.Struct("3i")  # struct ucred: pid, uid, gid
_FLOAT32_MAX = 3.4028234663852886e38  # the wire loss is a float32
_INT32_MAX = (1 << 31) - 1  # the wire sample count is an int32


class ProtocolError(ValueError):
    """A viewer sent something that is not a valid protocol v1 frame.

    ``key`` groups refusals for the log: each key is logged once.
    """

    def __init__(self, msg: str, key: str = "malformed") -> None:
        super().__init__(msg)
        self.key = key


# ---------------------------------------------------------------------------
# Socket discovery


def socket_dir() -> str:
    """Return the directory trainer sockets live in.

    ``$PIPETOP_SOCKET_DIR`` if set, else ``$XDG_RUNTIME_DIR/pipetop``, else
    ``/tmp/pipetop-UID``: the same rule as the Go side.
    """
    d = os.environ.get("PIPETOP_SOCKET_DIR")
    if d:
        return d
    d = os.environ.get("XDG_RUNTIME_DIR")
    if d:
        return os.path.join(d, "pipetop")
    return os.path.join("/tmp", "pipetop-%d" % os.getuid())


def socket_name(name: str, pid: int) -> str:
    """Return the file name ``NAME.PID.sock`` of a trainer's socket."""
    clean = "".join("_" if c in "/\0\n" else c for c in name) or "trainer"
    return "%s.%d.sock" % (clean, pid)


def _ensure_dir(path: str) -> None:
    """Create the socket directory 0700, or check an existing one is ours and not writable by others."""
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        st = os.stat(path)
    except OSError as e:
        raise OSError(e.errno, "pipetop: create socket dir %s: %s" % (path, e.strerror)) from e
    if st.st_uid != os.geteuid():
        raise PermissionError(
            "pipetop: socket dir %s belongs to uid %d, not %d" % (path, st.st_uid, os.geteuid())
        )
    if st.st_mode & 0o022:
        # Others could replace our socket. Never chmod a directory we did not
        # make (it could be /tmp): say what is wrong instead.
        raise PermissionError(
            "pipetop: socket dir %s has mode %04o: others can write to it "
            "(chmod 700 %s, or choose another with PIPETOP_SOCKET_DIR)" % (path, st.st_mode & 0o777, path)
        )


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


def _host_pid(status_path: str = "/proc/self/status") -> int:
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


def _process_start_ns() -> int:
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


# ---------------------------------------------------------------------------
# Peer checks and viewer input


def check_peer(peer_uid: int, peer_pid: int, my_uid: int) -> Optional[str]:
    """Return why a peer must be refused, or None when it is allowed.

    Only the trainer's own uid and root may attach.
    """
    if peer_uid == 0 or peer_uid == my_uid:
        return None
    return "permission denied: peer pid %d uid %d is neither uid %d nor root" % (
        peer_pid,
        peer_uid,
        my_uid,
    )


def _peer_cred(sock: socket.socket) -> Tuple[int, int, int]:
    """Return (pid, uid, gid) of a connected Unix socket's peer."""
    raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _UCRED.size)
    pid, uid, gid = _UCRED.unpack(raw)
    return pid, uid, gid


_KNOWN_TYPES = ("hello", "stages", "steps", "loader", "event", "progress", "drops", "error")


def decode_viewer_line(line: bytes) -> Dict[str, Any]:
    """Decode one line a viewer sent; only a v1 hello frame is accepted.

    Raises ProtocolError naming what was wrong.
    """
    if len(line) > MAX_FRAME:
        raise ProtocolError("frame of %d bytes exceeds the %d-byte limit" % (len(line), MAX_FRAME))
    try:
        frame = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise ProtocolError("decode frame %r: %s" % (_clip(line), e or type(e).__name__)) from None
    if not isinstance(frame, dict):
        raise ProtocolError("frame %r is not a JSON object" % _clip(line))
    typ = frame.get("type")
    if not typ:
        raise ProtocolError("frame %r: missing type" % _clip(line))
    if typ not in _KNOWN_TYPES:
        raise ProtocolError("frame %r: unknown frame type %r" % (_clip(line), typ))
    if typ != "hello":
        raise ProtocolError("viewer sent a %r frame; only hello is accepted" % typ)
    if frame.get("v") != PROTOCOL_VERSION:
        raise ProtocolError(_version_refusal(frame.get("v", 0)), key="version %r" % (frame.get("v"),))
    if not isinstance(frame.get("hello"), dict):
        raise ProtocolError("hello frame without hello")
    return frame


def _version_refusal(peer: Any) -> str:
    """Say which protocol each side speaks and what to do, as the Go server does."""
    advice = "upgrade pipetop"
    if isinstance(peer, int) and peer > PROTOCOL_VERSION:
        advice = (
            "upgrade the trainer's publisher (pipetrain, pipetop_publish.py), "
            "or attach with a pipetop that speaks protocol %d" % PROTOCOL_VERSION
        )
    return "protocol version mismatch: this viewer speaks protocol %s, the trainer speaks %d \u2014 %s" % (
        peer,
        PROTOCOL_VERSION,
        advice,
    )


def _clip(b: bytes, n: int = 80) -> str:
    s = b[:n].decode("utf-8", "replace")
    return s + "..." if len(b) > n else s


# ---------------------------------------------------------------------------
# Frame encoding


#: The longest hold (ms) a viewer's batch_ms may ask for.
MAX_BATCH_MS = 2000


def _batch_seconds(ms: Any) -> float:
    """How long a viewer's batch_ms asks frames to be held, in seconds,
    within [0, MAX_BATCH_MS]; anything but a number is 0."""
    if isinstance(ms, bool) or not isinstance(ms, (int, float)):
        return 0.0
    return min(max(float(ms), 0.0), MAX_BATCH_MS) / 1000.0


def _dumps(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":"), default=str).encode() + b"\n"


def _encode_config(config: Optional[Dict[str, Any]]) -> Any:
    if config is None:
        return None
    try:
        text = json.dumps(config, default=str)
    except (TypeError, ValueError) as e:
        return {"error": "config not encodable: %s" % e}
    if len(text) > _MAX_CONFIG:
        return {"error": "config of %d bytes exceeds %d" % (len(text), _MAX_CONFIG)}
    return json.loads(text)


# A step record as queued by the hot path:
# (step, t0, t1, samples, loss or None, cpu tuple, gpu tuple or None, names).
_Record = Tuple[int, int, int, int, Optional[float], Tuple[int, ...], Optional[Tuple[int, ...]], Tuple[str, ...]]


def _encode_step(r: _Record) -> str:
    step, t0, t1, n, loss, cpu, gpu, _ = r
    parts = ['{"step":%d,"t0":%d,"t1":%d,"n":%d' % (step, t0, t1, n)]
    if loss is not None and math.isfinite(loss) and abs(loss) <= _FLOAT32_MAX:
        parts.append(',"loss":%r' % loss)
    parts.append(',"cpu":[%s]' % ",".join(map(str, cpu)))
    if gpu is not None:
        parts.append(',"gpu":[%s]' % ",".join(map(str, gpu)))
    parts.append("}")
    return "".join(parts)


def _encode_steps(recs: Sequence[_Record]) -> bytes:
    body = ",".join(_encode_step(r) for r in recs)
    return ('{"type":"steps","steps":[%s]}\n' % body).encode()


# ---------------------------------------------------------------------------
# The hot path


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
        self._queue: Deque[Any] = collections.deque()
        self._pending_max = pending
        self._qlock = threading.Lock()
        self._overflow = 0
        self._published = 0
        self._closed = False
        self._gpu: Optional[_GpuTimer] = _GpuTimer.for_torch(max_gpu_lag) if cuda else None
        hello = {
            "role": "trainer",
            "name": name,
            "pid": self._pid,
            "host_pid": _host_pid(),
            "start_ns": _process_start_ns(),
        }
        hello.update(rank_fields(os.environ))
        cfg = _encode_config(config)
        if cfg is not None:
            hello["config"] = cfg
        path = socket_path or os.path.join(socket_dir(), socket_name(name, self._pid))
        self._server = _Server(path, hello, self._names, self._drain, viewer_queue, flush_interval, self._progress)
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
        self._step_no += 1
        for i in range(len(cpu)):
            cpu[i] = 0
        self._step_start = now  # steps tile the timeline: this one's cost is the next one's "other"
        self._where = (OTHER, now)
        if self._gpu is None:
            self._push(rec)
            return
        for r in self._gpu.end_step(rec, deferred):
            self._push(r)

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
        self._push(("event", time.time_ns(), str(kind), str(msg)[:_MAX_MSG]))

    def loader(self, stats: Dict[str, Any]) -> None:
        """Send the data loader's statistics (a ``loader`` frame, see
        docs/protocol.md); the latest one also greets later viewers.
        ``t`` is filled in when missing."""
        stats = dict(stats)
        stats.setdefault("t", time.time_ns())
        self._push(("loader", stats))

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
        }

    def _push(self, item: Any) -> None:
        if self._closed or os.getpid() != self._pid:
            return
        with self._qlock:
            if len(self._queue) >= self._pending_max:
                self._queue.popleft()
                self._overflow += 1
            self._queue.append(item)
            if item[0] not in ("event", "loader"):
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
# CUDA event timing


class _GpuTimer:
    """Times stages on the GPU with CUDA event pairs, read back without
    blocking. A step's record waits until its events completed, or until
    ``max_lag`` newer steps ended, then it is released with GPU times
    (-1 for stages without a finished pair).

    ``new_event`` returns objects with ``record()``, ``query()`` and
    ``elapsed_time(end)`` (milliseconds), like ``torch.cuda.Event``.
    ``copy_loss`` starts an asynchronous device-to-host copy of a loss
    tensor and returns ``(host_buffer, done_event)``; ``release_loss`` takes
    the host buffer back once it was read.
    """

    def __init__(
        self,
        new_event: Callable[[], Any],
        max_lag: int,
        copy_loss: Optional[Callable[[Any], Tuple[Any, Any]]] = None,
        release_loss: Optional[Callable[[Any], None]] = None,
    ) -> None:
        self._new_event = new_event
        self._free: List[Any] = []
        self._max_lag = max(1, max_lag)
        self._open: List[Tuple[int, Any, Any]] = []  # (stage index, start, end) of this step
        self._waiting: Deque[Tuple[_Record, List[Tuple[int, Any, Any]], Any]] = collections.deque()
        self._copy_loss = copy_loss
        self._release_loss = release_loss

    @classmethod
    def for_torch(cls, max_lag: int) -> Optional["_GpuTimer"]:
        """Return a timer backed by torch.cuda events, or None without CUDA."""
        try:
            import torch  # optional dependency, only for CUDA timing
        except ImportError:
            return None
        if not torch.cuda.is_available():
            return None
        pinned: List[Any] = []

        def copy_loss(t: Any) -> Tuple[Any, Any]:
            # A pinned destination keeps the copy asynchronous: nothing here
            # waits for the GPU.
            host = pinned.pop() if pinned else torch.empty(1, dtype=torch.float32, pin_memory=True)
            host.copy_(t.detach().reshape(-1)[:1].float(), non_blocking=True)
            done = torch.cuda.Event()
            done.record()
            return host, done

        return cls(lambda: torch.cuda.Event(enable_timing=True), max_lag, copy_loss, pinned.append)

    def _event(self) -> Any:
        return self._free.pop() if self._free else self._new_event()

    def begin(self) -> Any:
        """Record and return a start event."""
        ev = self._event()
        ev.record()
        return ev

    def end(self, start: Any, idx: int) -> None:
        """Record the end event of the span begun with ``start``."""
        ev = self._event()
        ev.record()
        self._open.append((idx, start, ev))

    def remap(self, old: Sequence[str], index: Dict[str, int]) -> None:
        """Re-index this step's open pairs after the stage list changed."""
        self._open = [(index[old[i]], s, e) for i, s, e in self._open]

    def discard_open(self) -> None:
        """Forget this step's pairs (the step was restarted)."""
        for _, s, e in self._open:
            self._free += (s, e)
        self._open = []

    def end_step(self, rec: _Record, loss: Any) -> List[_Record]:
        """Queue rec with this step's pairs; return the records now ready."""
        pending_loss = None
        if loss is not None and self._copy_loss is not None:
            pending_loss = self._copy_loss(loss)
        self._waiting.append((rec, self._open, pending_loss))
        self._open = []
        out = []
        while self._waiting:
            rec, pairs, pl = self._waiting[0]
            done = all(e.query() for _, _, e in pairs) and (pl is None or pl[1].query())
            if not done and len(self._waiting) <= self._max_lag:
                break
            self._waiting.popleft()
            out.append(self._finish(rec, pairs, pl))
        return out

    def flush(self) -> List[_Record]:
        """Release every waiting record with the GPU times known now."""
        out = []
        while self._waiting:
            rec, pairs, pl = self._waiting.popleft()
            out.append(self._finish(rec, pairs, pl))
        return out

    def _finish(self, rec: _Record, pairs: List[Tuple[int, Any, Any]], pl: Any) -> _Record:
        names = rec[7]
        gpu = [-1] * len(names)
        unknown = set()
        for idx, start, end in pairs:
            if end.query():
                gpu[idx] = max(gpu[idx], 0) + int(start.elapsed_time(end) * 1e6)
            else:
                unknown.add(idx)
            self._free += (start, end)
        for idx in unknown:
            gpu[idx] = -1
        loss = rec[4]
        if pl is not None:
            host, done = pl
            if done.query():
                loss = float(host[0])
            if self._release_loss is not None:
                self._release_loss(host)
        has_gpu = any(g >= 0 for g in gpu)
        return rec[:4] + (loss, rec[5], tuple(gpu) if has_gpu else None, names)


# ---------------------------------------------------------------------------
# The socket side (runs in a daemon thread)


class _Viewer:
    """One attached viewer: a bounded frame queue and a pending byte buffer
    that only ever holds whole frames, so drops never cut a frame."""

    __slots__ = (
        "sock", "queue", "limit", "out", "sent", "inbuf", "dropped", "reported", "blocked", "want_write", "progress",
        "batch", "next_write",
    )

    def __init__(self, sock: socket.socket, limit: int) -> None:
        self.sock = sock
        self.queue: Deque[bytes] = collections.deque()
        self.limit = limit
        self.out = bytearray()
        self.sent = 0
        self.inbuf = bytearray()
        self.dropped = 0
        self.reported = 0
        self.blocked = False
        self.want_write = False
        self.progress = False  # its hello accepts progress frames
        self.batch = 0.0  # seconds its hello asks frames to be held (batch_ms)
        self.next_write = 0.0  # monotonic time before which frames are held

    def offer(self, frame: bytes) -> bool:
        """Queue a frame; False (and counted) when the queue is full."""
        if len(self.queue) >= self.limit:
            self.dropped += 1
            return False
        self.queue.append(frame)
        return True

    def pump(self) -> None:
        """Write as much as the socket takes without blocking.

        Raises OSError when the connection is gone.
        """
        while True:
            if self.sent == len(self.out):
                self.out.clear()
                self.sent = 0
                if not self.queue:
                    self.blocked = False
                    return
                if self.dropped != self.reported:
                    self.reported = self.dropped
                    self.out += _dumps({"type": "drops", "dropped": self.dropped})
                while self.queue and len(self.out) < (256 << 10):
                    self.out += self.queue.popleft()
            try:
                n = self.sock.send(memoryview(self.out)[self.sent :])
            except (BlockingIOError, InterruptedError):
                self.blocked = True
                return
            self.sent += n

    def has_output(self) -> bool:
        """Report whether bytes are waiting to be sent."""
        return self.sent < len(self.out) or bool(self.queue)


class _Server:
    """Listens on the trainer socket and streams frames to viewers."""

    def __init__(
        self,
        path: str,
        hello: Dict[str, Any],
        names: Tuple[str, ...],
        drain: Callable[[], List[Any]],
        viewer_queue: int,
        flush_interval: float,
        progress: Optional[Callable[[], Dict[str, Any]]] = None,
    ) -> None:
        self.path = path
        self._progress = progress
        self._next_progress = 0.0
        self._hello = hello
        self._names = names  # the list the viewers were last told
        self._drain = drain
        self._viewer_queue = max(1, viewer_queue)
        self._interval = flush_interval
        self._viewers: Dict[int, _Viewer] = {}
        self._loader: Optional[bytes] = None  # the latest loader frame
        self._lock = threading.Lock()  # guards counters read by stats()
        self._accepted = self._refused = self._dropped = self._errors = 0
        self._stop = threading.Event()
        self._deadline = 0.0
        self._uid = os.geteuid()
        self._logged: set = set()  # refusal keys already logged
        self._sock = self._listen(path)
        self._record = Recording.from_env(dict(hello, stages=list(names)), path)
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._sel = selectors.DefaultSelector()
        self._sel.register(self._sock, selectors.EVENT_READ, None)
        self._sel.register(self._wake_r, selectors.EVENT_READ, None)
        self._thread = threading.Thread(target=self._run, name="pipetop-publisher", daemon=True)
        self._thread.start()

    @staticmethod
    def _listen(path: str) -> socket.socket:
        _ensure_dir(os.path.dirname(path) or ".")
        try:
            os.unlink(path)  # a stale socket of our own pid
        except FileNotFoundError:
            pass
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o177)
        try:
            sock.bind(path)
            # Listen at once: a viewer listing sockets treats one that
            # refuses connections as stale and removes it.
            sock.listen(16)
        except OSError as e:
            sock.close()
            raise OSError(e.errno, "pipetop: listen on %s: %s" % (path, e.strerror)) from e
        finally:
            os.umask(old)
        try:
            os.chmod(path, 0o600)  # the umask made it 0600 already
        except OSError:
            pass
        sock.setblocking(False)
        return sock

    def stats(self) -> Dict[str, int]:
        """Return the server's counters."""
        with self._lock:
            viewers = list(self._viewers.values())
            return {
                "viewers": len(viewers),
                "accepted": self._accepted,
                "refused": self._refused,
                "dropped": self._dropped,
                "blocked": sum(1 for v in viewers if v.blocked),
                "errors": self._errors,
            }

    def close(self, timeout: float) -> None:
        """Flush, wait up to timeout for readers, then stop and clean up."""
        self._deadline = time.monotonic() + max(0.0, timeout)
        self._stop.set()
        try:
            self._wake_w.send(b"x")
        except OSError:
            pass
        self._thread.join(timeout + 1.0)

    def forget(self) -> None:
        """Close our copies of the sockets in a forked child; the parent's
        remain open, and the socket file is left to the parent."""
        self._record = None  # the parent's file: written by the parent only
        for v in list(self._viewers.values()):
            _quiet_close(v.sock)
        for s in (self._sock, self._wake_r, self._wake_w):
            _quiet_close(s)
        try:
            self._sel.close()
        except OSError:
            pass

    # -- thread body --------------------------------------------------------

    def _run(self) -> None:
        try:
            next_flush = time.monotonic() + self._interval
            while not self._stop.is_set():
                try:
                    timeout = max(0.0, next_flush - time.monotonic())
                    self._poll(timeout)
                    if time.monotonic() >= next_flush:
                        self._flush()
                        self._send_progress()
                        next_flush = time.monotonic() + self._interval
                except Exception as e:  # noqa: BLE001 - keep serving; the loop must not notice
                    self._failed(e)
            self._poll(0)  # viewers that connected just before close
            self._flush()
            # Give viewers until the deadline to read what is left.
            while time.monotonic() < self._deadline and any(v.has_output() for v in self._viewers.values()):
                self._poll(min(0.05, max(0.0, self._deadline - time.monotonic())))
        finally:
            self._shutdown()

    def _failed(self, err: Exception) -> None:
        """Count an unexpected error of the server thread; report the first."""
        with self._lock:
            self._errors += 1
            first = self._errors == 1
        if first:
            sys.stderr.write("pipetop_publish: %s: %r (publishing continues)\n" % (self.path, err))
        time.sleep(0.01)

    def _poll(self, timeout: float) -> None:
        for key, mask in self._sel.select(timeout):
            obj = key.fileobj
            if obj is self._sock:
                self._accept()
            elif obj is self._wake_r:
                try:
                    self._wake_r.recv(64)
                except OSError:
                    pass
            else:
                v = key.data
                if mask & selectors.EVENT_READ:
                    self._read(v)
                if mask & selectors.EVENT_WRITE and v.sock.fileno() in self._viewers:
                    self._write(v)

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                return
            conn.setblocking(False)
            try:
                pid, uid, _ = _peer_cred(conn)
                reason = check_peer(uid, pid, self._uid)
            except OSError as e:
                uid, reason = -1, "peer credentials: %s" % e
            if reason is not None:
                with self._lock:
                    self._refused += 1
                self._log_refusal("uid %d" % uid if uid >= 0 else "credentials", reason)
                _send_error(conn, reason)
                _quiet_close(conn)
                continue
            v = _Viewer(conn, self._viewer_queue)
            hello = dict(self._hello, stages=list(self._names))
            v.offer(_dumps({"type": "hello", "v": PROTOCOL_VERSION, "hello": hello}))
            if self._loader is not None:
                v.offer(self._loader)
            with self._lock:
                self._viewers[conn.fileno()] = v
                self._accepted += 1
            self._sel.register(conn, selectors.EVENT_READ, v)
            self._write(v)

    def _read(self, v: _Viewer) -> None:
        try:
            data = v.sock.recv(64 << 10)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            self._drop(v, None)
            return
        if not data:
            self._drop(v, None)
            return
        v.inbuf += data
        while True:
            nl = v.inbuf.find(b"\n")
            if nl < 0:
                if len(v.inbuf) > MAX_FRAME:
                    self._drop(v, "frame exceeds the 1 MiB (%d-byte) limit" % MAX_FRAME, "too large")
                return
            line = bytes(v.inbuf[:nl])
            del v.inbuf[: nl + 1]
            try:
                frame = decode_viewer_line(line)
            except ProtocolError as e:
                self._drop(v, str(e), e.key)
                return
            hello = frame["hello"]
            accepts = hello.get("accepts")
            v.progress = isinstance(accepts, list) and "progress" in accepts
            v.batch = _batch_seconds(hello.get("batch_ms"))

    def _write(self, v: _Viewer) -> None:
        try:
            v.pump()
        except OSError:
            self._drop(v, None)
            return
        want = v.has_output()
        if want != v.want_write:
            v.want_write = want
            events = selectors.EVENT_READ | (selectors.EVENT_WRITE if want else 0)
            self._sel.modify(v.sock, events, v)

    def _log_refusal(self, key: str, reason: str) -> None:
        """Log a refused viewer once per kind of refusal (all are counted)."""
        if key in self._logged or len(self._logged) >= 32:
            return
        self._logged.add(key)
        sys.stderr.write(
            "pipetop_publish: %s: refused a viewer: %s (logged once; later refusals "
            "for this reason are only counted)\n" % (self.path, reason)
        )

    def _drop(self, v: _Viewer, reason: Optional[str], key: str = "malformed") -> None:
        """Disconnect a viewer, telling it why when it misbehaved."""
        with self._lock:
            if self._viewers.pop(v.sock.fileno(), None) is None:
                return
            if reason is not None:
                self._refused += 1
                self._log_refusal(key, reason)
        try:
            self._sel.unregister(v.sock)
        except (KeyError, ValueError):
            pass
        if reason is not None:
            _send_error(v.sock, reason)
        _discard_input(v.sock)
        _quiet_close(v.sock)

    def _flush(self) -> None:
        items = self._drain()
        if not self._viewers and self._record is None:
            # Nobody to encode for: only keep track of the stage list, which
            # the hello of the next viewer carries.
            for item in reversed(items):
                if item[0] not in ("event", "loader"):
                    self._names = item[7]
                    break
            for item in items:
                if item[0] == "loader":
                    self._loader = _dumps({"type": "loader", "loader": item[1]})
            return
        batch: List[_Record] = []
        for item in items:
            if item[0] == "event":
                self._broadcast_steps(batch)
                _, t, kind, msg = item
                self._broadcast(_dumps({"type": "event", "event": {"t": t, "kind": kind, "msg": msg}}))
                continue
            if item[0] == "loader":
                self._broadcast_steps(batch)
                self._loader = _dumps({"type": "loader", "loader": item[1]})
                self._broadcast(self._loader)
                continue
            if item[7] is not self._names and item[7] != self._names:
                self._broadcast_steps(batch)
                self._names = item[7]
                self._broadcast(_dumps({"type": "stages", "stages": list(self._names)}))
            batch.append(item)
            if len(batch) >= _STEPS_PER_FRAME:
                self._broadcast_steps(batch)
        self._broadcast_steps(batch)
        now = time.monotonic()
        for v in list(self._viewers.values()):
            if v.has_output() and not v.want_write:
                self._write_due(v, now)

    def _send_progress(self) -> None:
        """Once a second, tell the viewers that accept it where the loop is."""
        now = time.monotonic()
        if self._progress is None or now < self._next_progress:
            return
        self._next_progress = now + PROGRESS_INTERVAL
        viewers = [v for v in self._viewers.values() if v.progress]
        if not viewers:
            return
        frame = _dumps({"type": "progress", "progress": self._progress()})
        for v in viewers:
            if not v.offer(frame):
                with self._lock:
                    self._dropped += 1
            elif not v.want_write:
                self._write_due(v, now)

    def _write_due(self, v: _Viewer, now: float) -> None:
        """Start writing v's frames unless its batch holds them a while
        longer; a closing server holds nothing."""
        if now < v.next_write and not self._stop.is_set():
            return
        v.next_write = now + v.batch
        self._write(v)

    def _broadcast_steps(self, batch: List[_Record]) -> None:
        if batch:
            self._broadcast(_encode_steps(batch))
            batch.clear()

    def _broadcast(self, frame: bytes) -> None:
        if self._record is not None:
            try:
                self._record.frame(frame)
            except OSError as e:
                sys.stderr.write("pipetop: recording %s stopped: %s\n" % (self._record.path, e))
                self._record = None
        dropped = 0
        for v in self._viewers.values():
            if not v.offer(frame):
                dropped += 1
        if dropped:
            with self._lock:
                self._dropped += dropped

    def _shutdown(self) -> None:
        if self._record is not None:
            try:
                self._record.close()
            except OSError:
                pass
        for v in list(self._viewers.values()):
            self._drop(v, None)
        self._sel.close()
        _quiet_close(self._sock)
        _quiet_close(self._wake_r)
        _quiet_close(self._wake_w)
        try:
            os.unlink(self.path)
        except OSError:
            pass


def _send_error(sock: socket.socket, reason: str) -> None:
    """Tell a peer why it is being closed, best effort, without blocking."""
    try:
        sock.send(_dumps({"type": "error", "error": reason}))
    except OSError:
        pass


def _discard_input(sock: socket.socket) -> None:
    """Read what the peer sent and we did not consume: closing a Unix
    socket with unread input resets the connection, and the peer would lose
    the frames still in its receive buffer."""
    try:
        for _ in range(64):
            if not sock.recv(1 << 16):
                return
    except OSError:
        pass


def _quiet_close(sock: socket.socket) -> None:
    try:
        sock.close()
    except OSError:
        pass


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
