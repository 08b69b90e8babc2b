"""The phases of ``pipetop bisect`` inside an instrumented script.

``pipetop bisect -- CMD`` runs CMD once per phase, named by
``PIPETOP_BISECT_PHASE``; the automatic instrumentation (auto.py) carries
the phase out inside the unmodified script:

- ``full``: the script as it is.
- ``loader``: after the first optimizer step, the training DataLoader is
  drained alone (its own dataset, sampler, collate, workers), one step
  published per batch, across epochs, for ``PIPETOP_BISECT_SECONDS``; then
  the process exits with status 0. Every file a process of the phase
  opens for reading through Python (``open``, ``io.open``, ``os.open``)
  is recorded in ``PIPETOP_BISECT_OUT/files-PID.txt``: what a cold phase
  evicts from the page cache first.
- ``cold``: as loader; pipetop evicted the files first.
- ``cached``: after the first optimizer step, up to
  ``PIPETOP_BISECT_CACHE_BATCHES`` batches (at most ``PIPETOP_BISECT_CACHE_MB``,
  and what the loader delivers in ``PIPETOP_BISECT_CACHE_SECONDS``)
  of the training loader are kept, every page of their tensors brought
  into this process's memory (so that the cache is whole before the
  measurement, not faulted in while it runs), its workers are shut down,
  and the same batch objects are served again in order, cyclically, with
  the loader's epoch length. The phase file's ``cache.clean_step`` then
  names the first step that neither filled the cache nor waited on the
  loader: pipetop's warm-up counts from it.
- ``forward``: as cached, and the training loop's backward and optimizer
  steps are skipped (the graph a skipped backward leaves lives until the
  script drops its loss, in the next step: two graphs at once at most,
  about what the full phase's backward holds at its peak — measured on
  resnet18, 740 MB against the full phase's 758).

The recording process writes ``PIPETOP_BISECT_OUT/bisect-PID.json``
(schema ``pipetop-bisect-phase/1``), naming the training loader's creation
site and arguments (plan.site_fields). Unset, none of this runs. Any failure
here switches the phase logic off (the run goes on as in ``full``) and says
why in the file's notes.
"""

from __future__ import annotations

import atexit
import builtins
import contextlib
import io
import json
import multiprocessing
import os
import signal
import sys
import time
from typing import Any, Callable, Dict, List, Optional, Set

from . import plan as _plan
from .stages import BACKWARD, DATA_WAIT, OPTIM

__all__ = ["PHASES", "Opens", "Phase", "Replay", "active", "from_env", "nbytes", "skipped_backward", "skipped_step", "touch"]

# The phase names ("forward" names a phase here, not the stage: spelled
# out once, from a string, so that the stage-name layout check stays exact).
PHASES = tuple("loader cold cached forward full".split())
LOADER, COLD, CACHED, FORWARD_ONLY, FULL = PHASES
_DRAINS = (LOADER, COLD)  # the phases that drain the loader alone
SCHEMA = "pipetop-bisect-phase/1"
_MB = 1024 * 1024
_DEPTH = 6  # how deep nbytes walks into a batch
_PAGE = 4096
_MAX_FILES = 100000  # files one process records at most

# The functions that open files, as they were before any patch.
_real_os_open = os.open

_now = time.perf_counter_ns

# The phase of this process (None: no bisect phase, the normal run).
active: Optional["Phase"] = None


def from_env(environ: Any) -> Optional["Phase"]:
    """The phase $PIPETOP_BISECT_PHASE asks for; None when unset, or (with a
    one-line message on stderr) when it names no phase."""
    value = environ.get("PIPETOP_BISECT_PHASE", "").strip()
    if not value:
        return None
    if value not in PHASES:
        if multiprocessing.parent_process() is None:  # said once, not by every worker
            sys.stderr.write("pipetop: PIPETOP_BISECT_PHASE=%s: want loader, cold, cached, forward or full\n" % (value,))
        return None
    return Phase(value, environ)


def _number(environ: Any, name: str, default: float, notes: List[str]) -> float:
    """$name as a positive number; default (and a note) when unset or not one."""
    raw = environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
        if value > 0:
            return value
    except ValueError:
        pass
    notes.append("%s=%s is not a positive number: %g used" % (name, raw, default))
    return default


def _count(environ: Any, name: str, default: int, notes: List[str]) -> int:
    """$name as a count of at least 1; default (and a note) when unset or
    not an integer, 1 (and a note) when below."""
    raw = environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        notes.append("%s=%s is not an integer: %d used" % (name, raw, default))
        return default
    if value < 1:
        notes.append("%s=%s: at least 1 batch is cached" % (name, raw))
    return max(1, value)


def nbytes(obj: Any, depth: int = 0) -> int:
    """Bytes of the tensors and arrays found in a batch: inside tuples,
    lists, dicts, dataclasses and objects' attributes, down to a few levels."""
    if depth > _DEPTH or obj is None or isinstance(obj, (str, bytes, int, float, bool)):
        return 0
    size = getattr(obj, "element_size", None)
    if size is not None and hasattr(obj, "nelement"):  # a torch tensor
        return int(size()) * int(obj.nelement())
    n = getattr(obj, "nbytes", None)  # a numpy array
    if isinstance(n, int):
        return n
    if isinstance(obj, (tuple, list)):
        return sum(nbytes(v, depth + 1) for v in obj)
    if isinstance(obj, dict):
        return sum(nbytes(v, depth + 1) for v in obj.values())
    attrs = getattr(obj, "__dict__", None)
    if isinstance(attrs, dict):
        return sum(nbytes(v, depth + 1) for v in attrs.values())
    return 0


def touch(obj: Any, depth: int = 0) -> None:
    """Bring every page of the tensors and arrays in a batch into this
    process's memory (a strided read, one value a page): a batch from
    DataLoader workers arrives in shared memory that counts in a process's
    resident memory only once touched."""
    if depth > _DEPTH or obj is None or isinstance(obj, (str, bytes, int, float, bool)):
        return
    if hasattr(obj, "element_size") and hasattr(obj, "nelement"):  # a torch tensor
        if obj.nelement() and obj.device.type == "cpu":
            flat = obj.reshape(-1) if obj.is_contiguous() else obj.contiguous().reshape(-1)
            flat[::max(1, _PAGE // obj.element_size())].sum()
        return
    if hasattr(obj, "nbytes") and hasattr(obj, "reshape") and hasattr(obj, "itemsize"):  # a numpy array
        if obj.size:
            obj.reshape(-1)[::max(1, _PAGE // max(1, obj.itemsize))].sum()
        return
    if isinstance(obj, (tuple, list)):
        for v in obj:
            touch(v, depth + 1)
    elif isinstance(obj, dict):
        for v in obj.values():
            touch(v, depth + 1)
    elif isinstance(getattr(obj, "__dict__", None), dict):
        for v in obj.__dict__.values():
            touch(v, depth + 1)


class Opens:
    """The files the processes of a loader phase open for reading through
    Python, each recorded once per process in ``DIR/files-PID.txt`` (one
    absolute path a line): the files a cold phase evicts. Files of Python
    itself, its packages and the system are left out; a forked child
    records in a file of its own."""

    def __init__(self, out: str) -> None:
        self.out = out
        self.pid = 0
        self.fd = -1
        self.seen: Set[str] = set()
        here = os.path.dirname(os.path.abspath(__file__))
        self.skip = tuple(p + os.sep for p in {sys.prefix, sys.base_prefix, sys.exec_prefix, here} if p) + (
            "/proc/", "/sys/", "/dev/", "/usr/", "/lib/", "/etc/")

    def add(self, file: Any) -> None:
        """Record file (a path opened for reading), once."""
        if isinstance(file, int):
            return
        pid = os.getpid()
        if pid != self.pid:  # a forked child: its own record
            self.pid, self.fd, self.seen = pid, -1, set()
        path = os.fsdecode(os.fspath(file))
        if path in self.seen or len(self.seen) >= _MAX_FILES:
            return
        self.seen.add(path)
        path = os.path.abspath(path)
        if path.startswith(self.skip) or path.endswith((".py", ".pyc", ".so")) or "-packages" + os.sep in path:
            return
        if self.fd < 0:
            self.fd = _real_os_open(os.path.join(self.out, "files-%d.txt" % pid), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        os.write(self.fd, (path + "\n").encode("utf-8", "surrogateescape"))

    def open_wrapper(self, orig: Callable) -> Callable:
        """builtins.open / io.open, recording what is opened for reading."""

        def open(file: Any, mode: Any = "r", *args: Any, **kwargs: Any) -> Any:  # noqa: A001 - open's name
            f = orig(file, mode, *args, **kwargs)
            if isinstance(mode, str) and "r" in mode and "+" not in mode:
                try:
                    self.add(file)
                except Exception:  # noqa: BLE001 - the record is optional
                    pass
            return f

        open.__wrapped__ = orig  # type: ignore[attr-defined]
        open.__doc__ = getattr(orig, "__doc__", None)
        return open

    def os_open_wrapper(self, orig: Callable) -> Callable:
        """os.open, recording what is opened read-only."""

        def os_open(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
            fd = orig(path, flags, *args, **kwargs)
            if flags & os.O_ACCMODE == os.O_RDONLY and kwargs.get("dir_fd") is None:
                try:
                    self.add(path)
                except Exception:  # noqa: BLE001 - the record is optional
                    pass
            return fd

        os_open.__wrapped__ = orig  # type: ignore[attr-defined]
        os_open.__name__ = "open"
        return os_open


def _rank(environ: Any) -> Optional[int]:
    try:
        return int(environ["RANK"])
    except (KeyError, ValueError):
        return None


def _counted(it: Any, t: int) -> None:
    """Count a batch iterator it returned at t in its loader statistics."""
    info = getattr(it, "_pipetop", None)
    if info is not None:
        info.batches += 1
        info.last = t
        if not info.first:
            info.first = t


def _shutdown(it: Any) -> None:
    """Stop a DataLoader iterator's workers (where it has any)."""
    stop = getattr(it, "_shutdown_workers", None)
    if stop is not None:
        stop()


class Replay:
    """An iterator over the cached batches: the training loader's epochs
    once its batches are cached. It serves the phase's batches in order,
    cyclically, and stops after ``stop`` batches counted from the epoch's
    start (``done`` of them already served; stop None: never).
    auto.py wraps ``__next__`` like a DataLoader iterator's."""

    def __init__(self, phase: "Phase", done: int, stop: Optional[int], info: Any) -> None:
        self._phase = phase
        self._n = done
        self._stop = stop
        self._pipetop = info  # the loader statistics of the iterator it replaces

    def __iter__(self) -> "Replay":
        return self

    def __len__(self) -> int:
        if self._stop is None:
            raise TypeError("the replayed loader has no len()")
        return self._stop

    def take(self) -> Any:
        """The next cached batch (StopIteration at the epoch's end)."""
        n = self._n
        if n == self._stop:
            raise StopIteration
        self._n = n + 1
        ph = self._phase
        i = ph.pos
        ph.pos = i + 1 if i + 1 < ph.count else 0
        return ph.items[i]

    __next__ = take


class Phase:
    """One bisect phase carried out in this process (see the module doc)."""

    def __init__(self, name: str, environ: Any) -> None:
        self.name = name
        self.pid = os.getpid()
        self.out = environ.get("PIPETOP_BISECT_OUT", "")
        self.label = environ.get("PIPETOP_BISECT_LABEL", "").strip()[:120]  # pipetop tune's trial, for the header
        self.notes: List[str] = []
        self.seconds = _number(environ, "PIPETOP_BISECT_SECONDS", 30.0, self.notes)
        self.cap_mb = _number(environ, "PIPETOP_BISECT_CACHE_MB", 1024.0, self.notes)
        self.max_batches = _count(environ, "PIPETOP_BISECT_CACHE_BATCHES", 64, self.notes)
        self.fill_s = _number(environ, "PIPETOP_BISECT_CACHE_SECONDS", 5.0, self.notes)
        self.rank = _rank(environ)
        self.loader: Dict[str, Any] = {"seen": False, "len": None, "iterable": False, "batch_size": None, "workers": None,
                                       "site": None, "site_path": None, "site_line": None, "args": None}
        self.caching = name in (CACHED, FORWARD_ONLY)
        self.cache: Optional[Dict[str, Any]] = None
        if self.caching:
            self.cache = {"batches": 0, "bytes": 0, "cap_bytes": int(self.cap_mb * _MB),
                          "max_batches": self.max_batches, "limited_by": None, "clean_step": None}
        self.drained: Optional[Dict[str, int]] = None
        self.skipped = {BACKWARD: 0, OPTIM: 0} if name == FORWARD_ONLY else None
        self.st: Any = None
        self.patches: Any = None
        self.batch_len: Callable[[Any], int] = len
        self.started = False  # the publisher started: this is the recording process
        self.ended = False  # the process exits
        self.target: Any = None  # weakref to the training DataLoader
        self.length: Optional[int] = None  # its len(); None: replayed without epoch ends
        self.info: Any = None
        self.items: List[Any] = []
        self.count = 0
        self.pos = 0
        self.watch_id = 0  # id of the iterator whose batches are watched
        self.watched: List[Any] = []
        self.is_off = False  # the phase logic switched itself off

    # -- set-up -----------------------------------------------------------------

    def attach(self, st: Any, patches: Any, batch_len: Callable[[Any], int]) -> None:
        """Arm the phase on the instrumentation's state (torch was just
        imported); patches records what gets replaced later, batch_len
        counts a batch's samples."""
        self.st, self.patches, self.batch_len = st, patches, batch_len
        atexit.register(self.end)
        if self.name == FULL:
            return
        if self.name == LOADER and self.out:
            opens = Opens(self.out)
            patches.set(builtins, "open", opens.open_wrapper)
            patches.set(io, "open", opens.open_wrapper)
            patches.set(os, "open", opens.os_open_wrapper)
        st.on_step = self.first_step
        if self.caching:
            st.watch = self.watch
        st.skip = self.name == FORWARD_ONLY

    def begin(self, pub: Any) -> None:
        """The publisher started (in the recording process): say the phase."""
        self.started = True
        pub.event("phase", self.label or self.name)
        self.write()

    # -- before the first optimizer step -----------------------------------------

    def watch(self, it: Any, batch: Any) -> None:
        """A training batch from iterator it before the first optimizer
        step: kept, so that the first batches are cached too."""
        if id(it) != self.watch_id:
            self.watch_id, self.watched = id(it), []
        if len(self.watched) < self.max_batches:
            self.watched.append(batch)

    def first_step(self) -> None:
        """An optimizer step returned: the training loader is the iterator
        of the latest training batch."""
        st = self.st
        try:
            it = st.loader() if st.loader is not None else None
            if it is None:
                if self.name in _DRAINS:
                    self.notes.append("no DataLoader batch came before the first optimizer step: nothing to drain")
                    self.write()
                    sys.exit(0)
                return  # cached/forward: the next optimizer step may follow one
            st.on_step = st.watch = None
            if self.watch_id != id(it):
                self.watched = []
            self._identify(it)
            st.divert_it = it
            st.divert = self.drain if self.name in _DRAINS else self.takeover
        except SystemExit:
            raise
        except Exception as e:  # noqa: BLE001 - never break the user's run
            self.off(e)

    def _identify(self, it: Any) -> None:
        """Note the training DataLoader behind iterator it."""
        info = getattr(it, "_pipetop", None)
        loader = info.loader() if info is not None and info.loader is not None else None
        if loader is None:
            raise RuntimeError("the training DataLoader object is gone by the first optimizer step "
                               "(made inline, `for b in DataLoader(...)`?)")
        from torch.utils.data import IterableDataset

        self.target, self.info = info.loader, info
        iterable = isinstance(getattr(loader, "dataset", None), IterableDataset)
        try:
            self.length = None if iterable else len(loader)
        except TypeError:
            self.length = None
        self.loader = {"seen": True, "len": self.length, "iterable": iterable,
                       "batch_size": getattr(loader, "batch_size", None), "workers": getattr(loader, "num_workers", None),
                       **_plan.site_fields(loader)}
        if self.caching and self.length is None:
            self.notes.append("the training loader has no len() or is an IterableDataset: its cached batches are replayed without epoch ends")
        self.write()

    # -- cached and forward --------------------------------------------------------

    def takeover(self) -> Any:
        """The first __next__ on the training iterator after the first
        optimizer step: fill the cache, stop the workers, serve the cache."""
        st = self.st
        it = st.divert_it
        done = int(getattr(it, "_num_yielded", 0) or 0)
        try:
            kept = self._fill(it, type(it).__next__.__wrapped__)
        except Exception as e:  # noqa: BLE001 - the loader goes on, uncached
            st.divert_it = st.divert = None
            self.off(e)
            return type(it).__next__.__wrapped__(it)
        self.pos = kept % self.count
        current = Replay(self, done, self.length, self.info)
        st.divert = current.take
        try:
            _shutdown(it)
            self.patches.set(type(self.target()), "__iter__", self._iter_wrapper)
            with self.st.torch.no_grad():
                for b in self.items:
                    touch(b)
            # This step waited on the fill; the next is the first on the
            # cache alone.
            self.cache["clean_step"] = st.pub._step_no + 2
            self.write()
        except Exception as e:  # noqa: BLE001 - this epoch ends from the cache, the next ones are real
            self.off(e)
        return current.take()

    def _fill(self, it: Any, real_next: Callable[[Any], Any]) -> int:
        """Cache the watched batches and more from it, within the caps;
        returns how many of the watched ones were kept."""
        cap = self.cache["cap_bytes"]
        items, total, limit = [], 0, None
        for b in self.watched:
            total, limit = self._keep(items, total, b, cap)
            if limit:
                break
        self.watched = []
        kept = len(items)
        deadline = time.monotonic() + self.fill_s
        while not limit:
            if items and time.monotonic() >= deadline:
                limit = "time"
                self.notes.append("the training loader delivered %d batches in %g s of caching: %d replayed, fewer than the %d a cache may hold"
                                  % (len(items) - kept, self.fill_s, len(items), self.max_batches))
                break
            try:
                b = real_next(it)
            except StopIteration:
                limit = "epoch"
                break
            total, limit = self._keep(items, total, b, cap)
        if not items:
            raise RuntimeError("the training loader had no batch left to cache")
        self.items, self.count = items, len(items)
        self.cache.update(batches=len(items), bytes=total, limited_by=limit, clean_step=None)
        if limit == "cap":
            self._cap_note(items, total)
        return kept

    def _keep(self, items: List[Any], total: int, batch: Any, cap: int) -> Any:
        """Add batch to the cache unless it would pass the byte cap (the
        first is always kept); (bytes cached, why the cache is full or None)."""
        size = nbytes(batch)
        if items and total + size > cap:
            return total, "cap"
        items.append(batch)
        total += size
        if total > cap:
            return total, "cap"
        if len(items) >= self.max_batches:
            return total, "count"
        return total, None

    def _cap_note(self, items: List[Any], total: int) -> None:
        each = total / len(items) / _MB
        if len(items) == 1:
            self.notes.append("the training loader's batches (%.1f MB each) exceed --cache-mb %g: 1 batch cached" % (each, self.cap_mb))
        else:
            self.notes.append("--cache-mb %g reached: %d batches cached (%.1f MB each), fewer than the %d a cache may hold"
                              % (self.cap_mb, len(items), each, self.max_batches))

    def _iter_wrapper(self, orig: Callable[[Any], Any]) -> Callable[[Any], Any]:
        """DataLoader.__iter__: the training loader's next epochs replay the
        cache; any other loader is untouched."""

        def __iter__(loader: Any) -> Any:
            target = self.target
            if target is not None and (loader is target() or self._same_site(loader)):
                return Replay(self, 0, self.length, self.info)
            return orig(loader)

        __iter__.__wrapped__ = orig  # type: ignore[attr-defined]
        return __iter__

    def _same_site(self, loader: Any) -> bool:
        """Whether loader is the training loader made again: at the same
        site over the same dataset (a script that makes its DataLoader anew
        each epoch, inline in a for statement). A validation loader made by
        the same helper function has another dataset."""
        site = getattr(loader, "_pipetop_site", None)
        target = self.target() if self.target is not None else None
        return (site is not None and site == getattr(target, "_pipetop_site", None)
                and getattr(loader, "dataset", None) is getattr(target, "dataset", 0))

    # -- loader ----------------------------------------------------------------------

    def drain(self) -> Any:
        """The first __next__ on the training iterator after the first
        optimizer step: drain the loader alone, then exit."""
        st = self.st
        it = st.divert_it
        st.divert_it = st.divert = None
        real_next = type(it).__next__.__wrapped__
        pub = st.pub
        pub.begin_step()
        batches = samples = 0
        epochs = 1
        t0 = _now()
        end = t0 + int(self.seconds * 1e9)
        try:
            while t0 < end:
                try:
                    batch = real_next(it)
                except StopIteration:  # a new epoch's start is part of the next batch's wait
                    if not self._epoch_yielded(it):
                        break
                    loader = self.target()
                    if loader is None:
                        self.notes.append("the training DataLoader object is gone (made anew each epoch?): the drain stopped at its epoch's end")
                        break
                    it = iter(loader)
                    st.follow(it)
                    epochs += 1
                    continue
                t1 = _now()
                n = self.batch_len(batch)
                st._add(DATA_WAIT, t1 - t0)
                pub._end_step(t1, n, None)
                _counted(it, t1)
                batches += 1
                samples += n
                t0 = t1
        except KeyboardInterrupt:
            pass  # pipetop stops the phase with SIGINT: the drain's end, no traceback
        except Exception as e:  # noqa: BLE001 - the drain ends; the exit is still ours
            self.notes.append("the loader drain stopped after an error: %r" % (e,))
        finally:
            self.drained = {"batches": batches, "samples": samples, "epochs": epochs}
            self.write()
            with contextlib.suppress(Exception):
                _shutdown(it)
        sys.exit(0)

    def _epoch_yielded(self, it: Any) -> bool:
        """Whether iterator it (run out) yielded a batch; a note if not."""
        if getattr(it, "_num_yielded", 1):
            return True
        self.notes.append("the training loader yielded no batch in a whole epoch: drain stopped")
        return False

    # -- forward ---------------------------------------------------------------------

    def skip(self, what: str) -> None:
        """Count a skipped backward or optimizer step."""
        self.skipped[what] += 1
        if self.skipped[what] == 1:
            self.write()

    # -- failures and the file ----------------------------------------------------------

    def off(self, err: BaseException) -> None:
        """Switch the phase logic off after an internal error: the run goes
        on as in the full phase (a loader already replaying finishes its
        epoch from the cache; the next epochs are the real ones)."""
        st = self.st
        self.is_off = True
        self.notes.append("bisect %s phase switched off after an internal error, the run went on as the full phase: %r" % (self.name, err))
        st.on_step = st.watch = None
        st.skip = False
        self.target = None
        for ref in st.ddp_modules:
            m = ref()
            if m is not None:
                m.require_backward_grad_sync = True
        self.write()

    def doc(self) -> Dict[str, Any]:
        """The phase file's content."""
        return {"schema": SCHEMA, "phase": self.name, "pid": self.pid, "rank": self.rank,
                "loader": dict(self.loader), "cache": dict(self.cache) if self.cache is not None else None,
                "drained": self.drained, "skipped": dict(self.skipped) if self.skipped is not None else None,
                "off": self.is_off, "notes": self._notes()}

    def _notes(self) -> List[str]:
        notes = list(self.notes)
        if self.ended and self.caching and not self.loader["seen"]:
            notes.append("no training DataLoader seen (no DataLoader batch before an optimizer step): nothing cached")
        return notes

    def end(self) -> None:
        """The process exits: the file's last version, written with SIGINT
        held off (a stopped run may get a second one while it exits)."""
        self.ended = True
        held = hasattr(signal, "pthread_sigmask")
        if held:
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            self.write()
        finally:
            if held:
                signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})

    def write(self) -> None:
        """(Re)write PIPETOP_BISECT_OUT/bisect-PID.json (temp name, rename);
        only the process that records writes it."""
        if not self.out or not self.started or os.getpid() != self.pid:
            return
        path = os.path.join(self.out, "bisect-%d.json" % self.pid)
        tmp = path + ".tmp"
        try:
            with open(tmp, "w") as f:
                json.dump(self.doc(), f, indent=1)
            os.replace(tmp, path)
        except (OSError, TypeError, ValueError) as e:
            self.st.warn("bisect phase file %s not written: %r" % (path, e))


def skipped_backward(*args: Any, **kwargs: Any) -> None:
    """Stands in for a backward the forward phase skips."""
    if active is not None:
        active.skip(BACKWARD)


def skipped_step(*args: Any, **kwargs: Any) -> None:
    """Stands in for an optimizer step the forward phase skips."""
    if active is not None:
        active.skip(OPTIM)
