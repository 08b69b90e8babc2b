"""DataLoader statistics for the automatic instrumentation.

Each multi-process DataLoader iterator gets a small shared-memory file (one
24-byte slot per worker). Inside a worker, the dataset fetch (``__getitem__``
of every index of a batch plus collate) is timed and the worker's slot is
overwritten in place: cumulative busy ns, the start of the fetch in progress
(0 when idle), the number of batches and when its first fetch began. Nothing is sent per batch; a sampler
thread in the main process reads the slots once a second and publishes a
``loader`` frame (busy fraction of each worker over the last interval,
batches/s, queue depth). All clocks are CLOCK_MONOTONIC, which every process
of the machine shares.
"""

from __future__ import annotations

import mmap
import os
import struct
import sys
import tempfile
import threading
import time
import weakref
from typing import Any, Callable, Dict, List, Optional

from . import readwatch as _readwatch
from . import sockets as _sockets
from . import stacks as _stacks
from . import stageword as _stageword
from . import trip as _trip
from . import workerlink as _workerlink

_SLOT = struct.Struct("qqqq")  # busy_ns, start_ns of the fetch in progress, batches, first fetch start
_SHM_PREFIX = "pipetop-loader-"
_now = time.perf_counter_ns

# In a worker: (mmap, offset) of its slot and its running totals.
_slot: Optional[List[Any]] = None
# In a worker: whether a fetch is in progress (its stack samples count
# then), when it began, the worker's last fetch times and their median.
_in_fetch = False
_fetch_t0 = 0
_recent: List[int] = []
_typical_ns = 0

# The stage of a worker's stack samples in a fetch that has lasted
# SLOW_FACTOR times the worker's median fetch (and SLOW_MIN_NS): what a
# stall of the loop waits for, told from the usual fetches' samples.
SLOW_FETCH = "slow-fetch"
SLOW_FACTOR, SLOW_MIN_NS, SLOW_AFTER = 4, 20_000_000, 8  # SLOW_AFTER fetches make the median


def fetch_stage() -> Optional[str]:
    """The stage of a stack sample of this worker now: None outside a
    fetch, SLOW_FETCH in one far slower than the usual, else ""."""
    if not _in_fetch:
        return None
    typical = _typical_ns
    if typical and _now() - _fetch_t0 > max(SLOW_MIN_NS, SLOW_FACTOR * typical):
        return SLOW_FETCH
    return ""


def _fetched(ns: int) -> None:
    """Note a fetch of ns: the median of the last 32 is the usual."""
    global _typical_ns
    r = _recent
    r.append(ns)
    if len(r) > 32:
        del r[0]
    if len(r) >= SLOW_AFTER:
        _typical_ns = sorted(r)[len(r) // 2]
        _stageword.set_typical(_typical_ns)


class IterInfo:
    """What the main process knows about one DataLoader iterator (created:
    when its making began, before it started its workers)."""

    def __init__(self, loader: Any, created: int = 0) -> None:
        self.workers = int(getattr(loader, "num_workers", 0) or 0)
        self.batch = int(getattr(loader, "batch_size", 0) or 0)
        self.prefetch = int(getattr(loader, "prefetch_factor", 0) or 0) if self.workers else 0
        self.pin_memory = bool(getattr(loader, "pin_memory", False))
        self.persistent = bool(getattr(loader, "persistent_workers", False))
        self.length = _length(loader)
        self.site = getattr(loader, "_pipetop_site", None)  # (path, line) where the user made it
        self.batches = 0
        self.created = created or _now()
        self.first = 0  # when the loop received its first batch
        self.last = 0  # when the loop received its latest batch
        self.shm: Optional[mmap.mmap] = None
        self.trip: Optional[_trip.Trip] = None  # what its batches carry from the workers
        # The DataLoader, for pipetop bisect's phases: held as long as its
        # iterator is, since a loader made inline (`for b in DataLoader(...)`)
        # has no other reference.
        self.dl = loader

    def loader(self) -> Any:
        """The DataLoader this iterator belongs to."""
        return self.dl

    def busy(self, now: int) -> List[int]:
        """Cumulative busy ns of each worker up to now (fetches in progress
        counted up to now); empty without shared memory."""
        return [b for b, _ in self.slots(now)]

    def slots(self, now: int) -> List[Any]:
        """(cumulative busy ns up to now, first fetch start) of each worker."""
        if self.shm is None:
            return []
        out = []
        for w in range(self.workers):
            busy, start, _, first = _SLOT.unpack_from(self.shm, w * _SLOT.size)
            if 0 < start <= now:
                busy += now - start
            out.append((busy, first))
        return out


def _length(loader: Any) -> int:
    """len(loader): the batches of one epoch; 0 when it has none (an
    iterable dataset without __len__)."""
    try:
        return max(0, int(len(loader)))
    except Exception:  # noqa: BLE001 - no length: no epoch to compare with
        return 0


def worker_starts(loader: Any) -> int:
    """The worker processes started for loader so far (counted in
    mp_init_wrapper: its workers, once per iterator that started them)."""
    return int(getattr(loader, "_pipetop_starts", 0) or 0)


def started(info: IterInfo) -> None:
    """The iterator of info handed its first batch over: what starting its
    workers cost is kept on its DataLoader, for the loader frames sent
    while the next epoch's workers start."""
    if info.workers:
        info.dl._pipetop_start_ns = info.first - info.created


def iter_init_wrapper(orig: Callable) -> Callable:
    """_BaseDataLoaderIter.__init__: remember the loader's settings."""

    def __init__(self: Any, loader: Any, *args: Any, **kwargs: Any) -> None:
        orig(self, loader, *args, **kwargs)
        try:
            if getattr(self, "_pipetop", None) is None:
                self._pipetop = IterInfo(loader)
        except Exception:  # noqa: BLE001 - statistics are optional
            pass

    __init__.__wrapped__ = orig  # type: ignore[attr-defined]
    return __init__


def mp_init_wrapper(orig: Callable, active: Callable[[], bool]) -> Callable:
    """_MultiProcessingDataLoaderIter.__init__: give its workers a slot each
    while active() says the instrumentation records."""

    def __init__(self: Any, loader: Any, *args: Any, **kwargs: Any) -> None:
        shm = None
        if active():
            try:
                shm, path = _new_shm(int(loader.num_workers))
            except Exception as e:  # noqa: BLE001 - no shared memory: no worker stats
                sys.stderr.write("pipetop: no DataLoader worker statistics or stack samples: %r\n" % (e,))
                shm = None
        if shm is None:
            orig(self, loader, *args, **kwargs)
            return
        user_init = loader.worker_init_fn
        created = _now()
        try:
            loader.worker_init_fn = WorkerInit(path, user_init, _workerlink.receiver_path(), _stacks.hz(), _stageword.address())
            orig(self, loader, *args, **kwargs)
        finally:
            loader.worker_init_fn = user_init
        try:
            loader._pipetop_starts = worker_starts(loader) + int(loader.num_workers)
            self._pipetop = IterInfo(loader, created)
            self._pipetop.shm = shm
            weakref.finalize(self, _remove, path)
        except Exception:  # noqa: BLE001
            _remove(path)
            return
        try:
            _trip.watch(self, _trip.of(loader))
            self._pipetop.trip = _trip.of(loader)
        except Exception as e:  # noqa: BLE001 - no trip counters, same batches
            sys.stderr.write("pipetop: batches from DataLoader workers not counted: %r\n" % (e,))

    __init__.__wrapped__ = orig  # type: ignore[attr-defined]
    return __init__


def _new_shm(workers: int) -> Any:
    """Create a zeroed shared file with one slot per worker; returns (mmap,
    path). The name carries our pid and a random part: a file left by a
    killed run whose pid we now have cannot make creating ours fail."""
    base = _sockets.shm_dir()
    _sockets.sweep_dead(base, _SHM_PREFIX)
    fd, path = tempfile.mkstemp(prefix="%s%d-" % (_SHM_PREFIX, os.getpid()), dir=base)
    try:
        size = max(1, workers) * _SLOT.size
        os.ftruncate(fd, size)
        return mmap.mmap(fd, size), path
    except BaseException:
        _remove(path)
        raise
    finally:
        os.close(fd)


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


class WorkerInit:
    """The worker_init_fn given to instrumented loaders: maps the worker's
    slot, starts its stack samples and Zarr counters on their way to the
    main process (link: the main process's workerlink.Receiver path; rate:
    stack samples per second), then calls the user's own worker_init_fn.
    Picklable for spawned workers (pipetop_publish is on their path).
    word: the address of the main process's stage word (stageword), which
    a forked worker holds at the same address."""

    def __init__(self, path: str, user: Optional[Callable[[int], None]], link: Optional[str] = None, rate: float = 0.0,
                 word: int = 0) -> None:
        self.path = path
        self.user = user
        self.link = link
        self.rate = rate
        self.word = word

    def __call__(self, worker_id: int) -> None:
        global _slot
        try:
            fd = os.open(self.path, os.O_RDWR)
            try:
                mm = mmap.mmap(fd, 0)
            finally:
                os.close(fd)
            if (worker_id + 1) * _SLOT.size <= len(mm):
                _slot = [mm, worker_id * _SLOT.size, 0, 0, 0]
        except Exception:  # noqa: BLE001 - no stats, same data
            _slot = None
        _stageword.set_worker(worker_id, self.word)
        if self.link:
            try:
                _workerlink.Sender(self.link, worker_id, fetch_stage, self.rate).start()
            except Exception as e:  # noqa: BLE001 - no samples, same data
                sys.stderr.write("pipetop: worker %d: no stack samples: %r\n" % (worker_id, e))
        if self.user is not None:
            self.user(worker_id)


def _fetch_wrapper(orig: Callable) -> Callable:
    """A dataset fetcher's fetch, timed inside a worker that has a slot."""

    def fetch(self: Any, index: Any) -> Any:
        global _in_fetch, _fetch_t0
        s = _slot
        if s is None:
            return orig(self, index)
        mm, off = s[0], s[1]
        t0 = _fetch_t0 = _now()
        if not s[4]:
            s[4] = t0
        _SLOT.pack_into(mm, off, s[2], t0, s[3], s[4])
        _in_fetch = True
        _stageword.set_fetch(t0)
        try:
            return orig(self, index)
        finally:
            _in_fetch = False
            _stageword.set_fetch(0)
            took = _now() - t0
            s[2] += took
            s[3] += 1
            _SLOT.pack_into(mm, off, s[2], 0, s[3], s[4])
            _fetched(took)

    fetch.__wrapped__ = orig  # type: ignore[attr-defined]
    return fetch


def patch_fetchers(patches: Any) -> None:
    """Time the map-style and iterable dataset fetchers."""
    from torch.utils.data._utils import fetch

    for cls in (fetch._MapDatasetFetcher, fetch._IterableDatasetFetcher):
        patches.set(cls, "fetch", _fetch_wrapper)


def queue_depth(it: Any) -> int:
    """Batches ready for the loop: in the result queue and already received
    out of order; -1 when not measurable."""
    try:
        depth = it._data_queue.qsize()
        depth += sum(1 for v in list(it._task_info.values()) if len(v) == 2)
        return depth
    except Exception:  # noqa: BLE001 - qsize is not available everywhere
        return -1


def _epoch_fields(info: IterInfo) -> Dict[str, Any]:
    """What tells an epoch boundary's pause (docs/protocol.md, loader):
    the loader's length, persistent_workers, the worker processes started
    so far, what the newest start cost (from the iterator's making to its
    first batch) and the creation site."""
    out: Dict[str, Any] = {}
    if info.length:
        out["length"] = info.length
    if info.persistent:
        out["persistent_workers"] = True
    starts = worker_starts(info.dl)
    if starts:
        out["worker_starts"] = starts
    start = int(getattr(info.dl, "_pipetop_start_ns", 0) or 0)
    if start > 0:
        out["worker_start_ns"] = start
    if info.site is not None:
        out["site"] = "%s:%d" % (os.path.basename(info.site[0]), info.site[1])
    return out


class Sampler:
    """Publishes the training loader's statistics once per interval."""

    def __init__(self, pub: Any, current: Callable[[], Any], interval: float = 1.0) -> None:
        self._pub = pub
        self._current = current
        self._interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="pipetop-loader", daemon=True)
        self._last: Dict[int, Any] = {}  # id(info) -> (now, batches, busy list)
        self._cores = os.cpu_count() or 0

    def start(self) -> None:
        """Start the sampling thread."""
        self._thread.start()

    def stop(self) -> None:
        """Stop the sampling thread."""
        self._stop.set()

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                stats = self.sample()
                if stats is not None:
                    self._pub.loader(stats)
            except Exception as e:  # noqa: BLE001 - statistics are optional
                sys.stderr.write("pipetop: loader statistics stopped: %r\n" % (e,))
                return

    def sample(self) -> Optional[Dict[str, Any]]:
        """Statistics of the current training loader since the last sample.
        Once its iterator is gone (an epoch's end: the next epoch's workers
        may take seconds to start before its first batch makes it current)
        they go on, delivering nothing."""
        it, info = self._current()
        if info is None:
            return None
        now = _now()
        # A gone iterator's workers are gone too: a fetch it left in
        # progress counts no further than its last batch.
        busy = info.busy(now if it is not None else info.last)
        t0, b0, busy0 = self._last.get(id(info), (info.created, 0, [0] * len(busy)))
        self._last = {id(info): (now, info.batches, busy)}
        dt = max(1, now - t0)
        return self._stats(info, it, (info.batches - b0) * 1e9 / dt, [(b - p) / dt for b, p in zip(busy, busy0)])

    def final(self) -> Optional[Dict[str, Any]]:
        """Statistics of the current training loader over its working life:
        batches/s from the first batch to the last, each worker's busy
        fraction from its first fetch to the last batch."""
        it, info = self._current()
        if info is None:
            return None
        end = info.last or _now()
        rate = (info.batches - 1) * 1e9 / (end - info.first) if info.batches > 1 and end > info.first else 0.0
        each = [b / (end - first) if first and end > first else 0.0 for b, first in info.slots(end)]
        return self._stats(info, it, rate, each)

    def _stats(self, info: IterInfo, it: Any, batches_per_sec: float, each: List[float]) -> Dict[str, Any]:
        each = [round(min(1.0, max(0.0, f)), 4) for f in each]
        out: Dict[str, Any] = {
            "source": "torch",
            "workers": info.workers,
            "batch": info.batch,
            "batches_per_sec": round(batches_per_sec, 3),
            "samples_per_sec": round(batches_per_sec * info.batch, 3),
            "worker_busy": round(sum(each) / len(each), 4) if each else 0.0,
            "worker_busy_each": each,
            "queue_depth": max(0, queue_depth(it)) if info.workers and it is not None else 0,
            "queue_cap": info.prefetch * info.workers,
            "prefetch_factor": info.prefetch,
            "pin_memory": info.pin_memory,
            "cores": self._cores,
        }
        out.update(_epoch_fields(info))
        out.update(_readwatch.loader_fields())
        if info.trip is not None and info.trip.batches:
            out["batch_trip"] = info.trip.fields()
        return out
