"""Read amplification of the user's own HDF5 datasets (h5py).

When h5py is imported under the automatic instrumentation, reads of its
datasets are counted per file and dataset: each outermost
``Dataset.__getitem__`` and ``Dataset.read_direct`` on any thread, the
bytes it returned, the chunks it made HDF5 decompress and their decoded
size, and the time spent. Bytes decoded over bytes returned is the
dataset's read amplification: ``dset[i]`` of a dataset chunked one
trajectory (150 frames) at a time decompresses 150 frames to return one.

What is decoded is computed from the selection and the dataset's layout
(h5py has no per-chunk hook):

* A chunked dataset with filters (gzip, lzf, szip, shuffle, any other)
  decodes every chunk the selection touches, whole (partial edge chunks
  too: HDF5 stores them full size).
* HDF5's chunk cache (per open dataset; h5py's default 1 MiB, 521 slots,
  or what ``rdcc_nbytes``/``rdcc_nslots`` set, read from the dataset's
  access property list) keeps decoded chunks no larger than its size, so
  reading the same chunk again may not decode it. This module models that
  cache per open dataset: a chunk already in the model is not counted
  again; a chunk larger than the cache is never kept (decoded on every
  read, as HDF5 does); the model holds as many chunks as fit in the
  cache's bytes, evicts the least recently used first, and a chunk whose
  slot (its linear index modulo the slots, as HDF5 hashes) holds another
  chunk evicts that one. HDF5's own eviction prefers fully read chunks
  (its ``w0``); the model is plain LRU, so for reads that cover chunks
  whole the count can differ from HDF5's by the chunks it kept. The model
  starts empty when a dataset is opened again after all its handles were
  closed (``f[name][i]`` opens and closes it on every read, and HDF5 drops
  the cache with it). A read that touches more than ``MAX_MODELLED``
  chunks is counted in full and empties the model.
* A contiguous (or compact) dataset, and a chunked one without filters
  whose chunks do not fit in the cache (HDF5 reads those in place), count
  the bytes of the selection's extent: from its first element to its last
  in row-major order. That is an upper bound: HDF5's sieve buffer skips
  gaps wider than itself.

The filter pipeline is read once per dataset: gzip (level), lzf, szip,
"none", or the id of a filter this module does not name (never an error).
A read through a file that another process opened (a DataLoader worker
reading an ``h5py.File`` the main process opened before the fork) is
counted in ``forked_reads``: HDF5 is not fork-safe, and such workers share
one file's state copied from the parent.

Counting never changes what the user's read returns or raises: a read
that raises is not counted and its exception propagates unchanged. The
counters live in the process that reads (a DataLoader worker sends its
own to the main process, see ``workerlink`` and ``readwatch``).
"""

from __future__ import annotations

import collections
import contextvars
import math
import os
import threading
import time
import weakref
from typing import Any, Callable, Dict, List, Optional, Tuple

from .zarrwatch import _axes, _int_list, _is_int, chunks_touched

_now = time.perf_counter_ns
MAX_DATASETS = 64  # datasets counted per process; reads of others are not
MAX_MODELLED = 1024  # chunks one read may touch and still go through the cache model
MAX_HANDLES = 4096  # open dataset handles remembered per process
# Counters of one dataset, in this order on the wire between processes.
FIELDS = ("calls", "chunks_decoded", "bytes_decoded", "bytes_returned", "read_ns", "forked_reads")
_CALLS, _CHUNKS, _DECODED, _RETURNED, _READ_NS, _FORKED = range(len(FIELDS))

# HDF5's filter ids (H5Z_FILTER_*) and h5py's LZF.
_FILTERS = {1: "gzip", 4: "szip", 32000: "lzf"}
_SHUFFLE, _FLETCHER32, _NBIT, _SCALEOFFSET = 2, 3, 5, 6

# The dataset whose read is in progress in this context (a subclass's
# __getitem__ calling h5py's is one read).
_current: contextvars.ContextVar[bool] = contextvars.ContextVar("pipetop_h5_read", default=False)

# The pid that opened each file, by the file's HDF5 id (kept across a
# fork: a child reading through an id its parent opened finds the
# parent's pid here); at most MAX_OPENED, this process's oldest dropped
# first.
_opened: Dict[int, int] = {}
MAX_OPENED = 4096


class Counts:
    """One dataset (file and path) of this process: what it is, its
    counters since the last take and the model of its chunk cache."""

    __slots__ = ("key", "info", "c", "shape", "chunks", "itemsize", "chunk_bytes", "filtered", "modelled",
                 "cap", "nslots", "down", "rest", "strides", "cache", "slots", "live")

    def __init__(self, key: str, info: Dict[str, Any], shape: Tuple[int, ...], chunks: Optional[Tuple[int, ...]],
                 itemsize: int, filtered: bool, cache_bytes: int, nslots: int) -> None:
        self.key, self.info = key, info
        self.c = [0] * len(FIELDS)
        self.shape, self.chunks, self.itemsize, self.filtered = shape, chunks, itemsize, filtered
        self.strides = _strides(shape)
        self.chunk_bytes = math.prod(chunks) * itemsize if chunks else 0
        n = [-(-s // c) for s, c in zip(shape, chunks)] if chunks else []
        self.down = _strides(tuple(n))  # linear chunk index = sum(coord * down)
        self.rest = _rest_offsets(n, self.down) if n else [0]
        self.cache: "collections.OrderedDict[int, None]" = collections.OrderedDict()
        self.slots: Dict[int, int] = {}
        self.live: "weakref.WeakSet[Any]" = weakref.WeakSet()
        self.opened(cache_bytes, nslots)

    def opened(self, cache_bytes: int, nslots: int) -> None:
        """The dataset was opened (again) with a chunk cache of cache_bytes
        and nslots slots: the model starts empty, as HDF5's cache does."""
        self.cache.clear()
        self.slots.clear()
        fits = bool(self.chunks) and 0 < self.chunk_bytes <= cache_bytes and nslots > 0
        # Chunked reads go through the chunks (and the cache model) when
        # filtered or cacheable; otherwise HDF5 reads the extent in place.
        self.modelled = bool(self.chunks) and (self.filtered or fits)
        self.cap = min(nslots, cache_bytes // self.chunk_bytes) if fits else 0
        self.nslots = max(1, nslots)

    def decoded(self, sel: Any) -> Tuple[int, int]:
        """The chunks a read of sel decodes and their bytes (chunks 0 and
        the extent's bytes when it reads in place)."""
        if not self.modelled:
            return 0, _extent(sel, self.shape, self.strides) * self.itemsize
        if (type(sel) is int or _is_int(sel)) and self.shape:
            base = (int(sel) % self.shape[0] // self.chunks[0]) * self.down[0]  # type: ignore[index]
            ids = [base + r for r in self.rest] if len(self.rest) > 1 else [base]
        else:
            ids = _chunk_ids(sel, self.shape, self.chunks, self.down)  # type: ignore[arg-type]
            if ids is None:
                self.cache.clear()
                self.slots.clear()
                n = chunks_touched(_plain(sel), self.shape, self.chunks)  # type: ignore[arg-type]
                return n, n * self.chunk_bytes
        n = self._through_cache(ids) if self.cap else len(ids)
        return n, n * self.chunk_bytes

    def _through_cache(self, ids: List[int]) -> int:
        """How many of the chunks ids the modelled cache does not hold
        (each one is then decoded and kept)."""
        cache, slots, n = self.cache, self.slots, 0
        for k in ids:
            if k in cache:
                cache.move_to_end(k)
                continue
            n += 1
            s = k % self.nslots
            old = slots.get(s)
            if old is not None:
                del cache[old]
            elif len(cache) >= self.cap:
                ev, _ = cache.popitem(last=False)
                del slots[ev % self.nslots]
            cache[k] = None
            slots[s] = k
        return n


class Handle:
    """One open h5py DatasetID of this process: its dataset's counters and
    whether its file was opened in another process."""

    __slots__ = ("ref", "counts", "forked")

    def __init__(self, ref: Any, counts: Optional[Counts], forked: bool) -> None:
        self.ref, self.counts, self.forked = ref, counts, forked


class Registry:
    """Every counted dataset of this process, by key (file path and
    dataset path): the reads since the last take, and the totals of the
    run (in the main process, where the workers' reads are added)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._datasets: Dict[str, Counts] = {}
        self._handles: Dict[int, Handle] = {}
        self.totals: Dict[str, List[int]] = {}
        self.infos: Dict[str, Dict[str, Any]] = {}

    def handle(self, dsid: Any) -> Handle:
        """The Handle of dsid (made on its first read)."""
        h = self._handles.get(id(dsid))
        if h is not None and h.ref() is dsid:
            return h
        c, forked = None, False
        try:
            c, forked = self._make(dsid)
        except Exception:  # noqa: BLE001 - an unexpected dataset: not counted
            c = None
        h = Handle(weakref.ref(dsid), c, forked)
        with self._lock:
            if len(self._handles) >= MAX_HANDLES:
                self._handles = {k: v for k, v in self._handles.items() if v.ref() is not None}
            if len(self._handles) < MAX_HANDLES:
                self._handles[id(dsid)] = h
        return h

    def _make(self, dsid: Any) -> Tuple[Optional[Counts], bool]:
        import h5py  # noqa: PLC0415 - only reached once h5py is imported

        fname = _text(h5py.h5f.get_name(dsid))
        path = _text(h5py.h5i.get_name(dsid) or b"")
        fid = h5py.h5i.get_file_id(dsid)
        open_pid = _opened.get(fid.id, 0)
        forked = open_pid not in (0, os.getpid())
        key = os.path.abspath(fname) + ":" + path
        with self._lock:
            c = self._datasets.get(key)
            if c is None:
                if len(self._datasets) >= MAX_DATASETS:
                    return None, forked
                c = self._datasets[key] = _counts(dsid, key, os.path.abspath(fname), path, open_pid)
                c.live.add(dsid)
            elif not any(True for _ in c.live):
                c.opened(*_cache_of(dsid))  # all its handles were closed: HDF5 dropped its cache
                c.live.add(dsid)
            else:
                c.live.add(dsid)
        return c, forked

    def count(self, h: Handle, sel: Any, returned: int, dt: int) -> None:
        """Count one read of sel through h: dt ns, returned bytes."""
        c = h.counts
        if c is None:
            return
        with self._lock:
            try:
                n, nb = c.decoded(sel)
            except Exception:  # noqa: BLE001 - an unusual selection: as read
                n, nb = 0, returned
            cc = c.c
            cc[_CALLS] += 1
            cc[_CHUNKS] += n
            cc[_DECODED] += nb
            cc[_RETURNED] += returned
            cc[_READ_NS] += dt
            if h.forked:
                cc[_FORKED] += 1

    def take(self) -> List[Dict[str, Any]]:
        """Each dataset's counters since the last take (datasets without
        reads left out), with its description; they start again from zero."""
        out = []
        with self._lock:
            for c in self._datasets.values():
                if any(c.c):
                    out.append({"key": c.key, "info": c.info, "c": c.c})
                    c.c = [0] * len(FIELDS)
        return out

    def add_totals(self, deltas: List[Dict[str, Any]]) -> None:
        """Add counters taken here or sent by a worker to the run's totals."""
        with self._lock:
            for d in deltas:
                key, info, c = d.get("key"), d.get("info"), d.get("c")
                if not isinstance(key, str) or not isinstance(c, list) or len(c) != len(FIELDS):
                    continue
                tot = self.totals.get(key)
                if tot is None:
                    if len(self.totals) >= MAX_DATASETS:
                        continue
                    tot = self.totals[key] = [0] * len(FIELDS)
                    self.infos[key] = info if isinstance(info, dict) else {}
                for i, v in enumerate(c):
                    if isinstance(v, int) and v > 0:
                        tot[i] += v

    def loader_fields(self) -> Dict[str, Any]:
        """The loader frame's HDF5 fields from the run's totals: each
        dataset (most bytes decoded first) and the sums over all of them."""
        with self._lock:
            sets = []
            for key, tot in self.totals.items():
                a = dict(self.infos.get(key, {}))
                a.update(zip(FIELDS, tot))
                ret = tot[_RETURNED]
                a["read_amp"] = round(tot[_DECODED] / ret, 3) if ret else 0.0
                a["opened_before_fork"] = tot[_FORKED] > 0
                sets.append(a)
        if not sets:
            return {}
        sets.sort(key=lambda a: -a["bytes_decoded"])
        dec = sum(a["bytes_decoded"] for a in sets)
        ret = sum(a["bytes_returned"] for a in sets)
        return {"hdf5": sets, "bytes_read": 0, "bytes_decoded": dec, "bytes_used": ret, "decode_ns": 0,
                "read_amp": round(dec / ret, 3) if ret else 0.0}

    def forget(self) -> None:
        """Start afresh (a forked child counts its own reads only)."""
        self._lock = threading.Lock()
        self._datasets, self._handles, self.totals, self.infos = {}, {}, {}, {}


registry = Registry()


def _counts(dsid: Any, key: str, fname: str, path: str, open_pid: int) -> Counts:
    """A dataset's description and counters, read from its property lists."""
    shape = tuple(int(x) for x in dsid.shape)
    dcpl = dsid.get_create_plist()
    chunks = None
    try:
        chunks = tuple(int(x) for x in dcpl.get_chunk())
    except Exception:  # noqa: BLE001 - not chunked
        chunks = None
    filt, opts, others = filters(dcpl)
    nbytes, nslots = _cache_of(dsid)
    itemsize = int(dsid.dtype.itemsize)
    info = {"file": fname, "path": path, "shape": list(shape), "chunks": list(chunks or ()),
            "dtype": str(dsid.dtype), "itemsize": itemsize, "filter": filt, "filter_opts": opts,
            "shuffle": _SHUFFLE in others, "cache_bytes": int(nbytes), "open_pid": open_pid}
    filtered = bool(others) or filt != "none"
    return Counts(key, info, shape, chunks, itemsize, filtered, nbytes, nslots)


def _cache_of(dsid: Any) -> Tuple[int, int]:
    """The bytes and slots of the chunk cache dsid was opened with."""
    nslots, nbytes, _ = dsid.get_access_plist().get_chunk_cache()
    return int(nbytes), int(nslots)


def filters(dcpl: Any) -> Tuple[str, List[int], List[int]]:
    """A dataset's compression filter ("gzip", "lzf", "szip", "none", or
    the id, as text, of another filter), its options, and the ids of the
    other filters in its pipeline (shuffle, fletcher32, ...)."""
    name, opts, others = "none", [], []
    for i in range(dcpl.get_nfilters()):
        code, _flags, values, _n = dcpl.get_filter(i)[:4]
        code = int(code)
        if name == "none" and code not in (_SHUFFLE, _FLETCHER32, _NBIT, _SCALEOFFSET):
            name = _FILTERS.get(code, str(code))
            opts = [int(v) for v in values]
        else:
            others.append(code)
    return name, opts, others


def _text(b: Any) -> str:
    return b.decode("utf-8", "surrogateescape") if isinstance(b, bytes) else str(b)


def _strides(shape: Tuple[int, ...]) -> List[int]:
    """Row-major strides of shape, in elements."""
    out, s = [0] * len(shape), 1
    for i in range(len(shape) - 1, -1, -1):
        out[i] = s
        s *= shape[i]
    return out


def _rest_offsets(n: List[int], down: List[int]) -> List[int]:
    """The linear offsets of every chunk of the axes after the first."""
    offs = [0]
    for nc, d in zip(n[1:], down[1:]):
        offs = [o + j * d for o in offs for j in range(nc)]
    return offs


def _plain(sel: Any) -> Any:
    """sel without h5py's field names (strings select compound fields)."""
    if isinstance(sel, tuple):
        return tuple(s for s in sel if not isinstance(s, (str, bytes)))
    return Ellipsis if isinstance(sel, (str, bytes)) else sel


def _axis_indices(sel: Any, shape: Tuple[int, ...]) -> List[Any]:
    """sel as one selector per axis; a boolean mask over every axis
    becomes its coordinate arrays."""
    sel = _plain(sel)
    if getattr(getattr(sel, "dtype", None), "kind", "") == "b" and getattr(sel, "ndim", 1) == len(shape) > 1:
        return list(sel.nonzero())
    return _axes(sel, len(shape))


def _axis_chunks(s: Any, dim: int, c: int) -> List[int]:
    """The chunk coordinates selector s touches on an axis of dim points
    chunked c at a time."""
    if isinstance(s, slice):
        start, stop, step = s.indices(dim)
        if (step > 0 and stop <= start) or (step < 0 and stop >= start):
            return []
        if step == 1:
            return list(range(start // c, (stop - 1) // c + 1))
        return sorted({i // c for i in range(start, stop, step)})
    if _is_int(s):
        return [int(s) % dim // c] if dim else []
    return sorted({i // c for i in _int_list(s, dim)})


def _chunk_ids(sel: Any, shape: Tuple[int, ...], chunks: Tuple[int, ...], down: List[int]) -> Optional[List[int]]:
    """The linear indices of the chunks a read of sel touches; None when
    there are more than MAX_MODELLED."""
    per = [_axis_chunks(s, d, c) for s, d, c in zip(_axis_indices(sel, shape), shape, chunks)]
    if math.prod(len(p) for p in per) > MAX_MODELLED:
        return None
    ids = [0]
    for p, d in zip(per, down):
        ids = [i + j * d for i in ids for j in p]
    return ids


def _extent(sel: Any, shape: Tuple[int, ...], strides: List[int]) -> int:
    """The elements from the selection's first element to its last, in
    row-major order (0 for an empty selection)."""
    lo = hi = 0
    for s, d, st in zip(_axis_indices(sel, shape), shape, strides):
        idx = _axis_chunks(s, d, 1)
        if not idx:
            return 0
        lo += idx[0] * st
        hi += idx[-1] * st
    return hi - lo + 1


# ---------------------------------------------------------------------------
# Patches


def _getitem_wrapper(orig: Callable) -> Callable:
    """Dataset.__getitem__: counted when it is the outermost read."""
    reg = registry

    def __getitem__(self: Any, args: Any, *rest: Any, **kwargs: Any) -> Any:
        if _current.get():
            return orig(self, args, *rest, **kwargs)
        token = _current.set(True)
        t0 = _now()
        try:
            out = orig(self, args, *rest, **kwargs)
        finally:
            _current.reset(token)
        try:
            dt = _now() - t0
            reg.count(reg.handle(self.id), args, int(getattr(out, "nbytes", 0)), dt)
        except Exception:  # noqa: BLE001 - counting is optional
            pass
        return out

    return _wrapped(__getitem__, orig)


def _read_direct_wrapper(orig: Callable) -> Callable:
    """Dataset.read_direct: counted as a read of source_sel."""
    reg = registry

    def read_direct(self: Any, dest: Any, source_sel: Any = None, dest_sel: Any = None) -> Any:
        if _current.get():
            return orig(self, dest, source_sel, dest_sel)
        token = _current.set(True)
        t0 = _now()
        try:
            out = orig(self, dest, source_sel, dest_sel)
        finally:
            _current.reset(token)
        try:
            dt = _now() - t0
            sel = Ellipsis if source_sel is None else source_sel
            n = _selected(sel, tuple(self.shape))
            reg.count(reg.handle(self.id), sel, n * int(self.dtype.itemsize), dt)
        except Exception:  # noqa: BLE001 - counting is optional
            pass
        return out

    return _wrapped(read_direct, orig)


def _selected(sel: Any, shape: Tuple[int, ...]) -> int:
    """The number of elements sel selects (read_direct returns nothing to
    measure)."""
    per = _axis_indices(sel, shape)
    n = 1
    for s, d in zip(per, shape):
        if isinstance(s, slice):
            n *= len(range(*s.indices(d)))
        elif not _is_int(s):
            n *= len(_int_list(s, d))
    return n


def _file_init_wrapper(orig: Callable) -> Callable:
    """File.__init__: the pid that opened a file by its name."""
    import h5py  # noqa: PLC0415

    object_id = h5py._objects.ObjectID

    def __init__(self: Any, name: Any, *args: Any, **kwargs: Any) -> None:
        orig(self, name, *args, **kwargs)
        if not isinstance(name, object_id):
            try:
                opened(self.id.id, os.getpid())
            except Exception:  # noqa: BLE001
                pass

    return _wrapped(__init__, orig)


def opened(fid: int, pid: int) -> None:
    """Remember that pid opened the file whose HDF5 id is fid."""
    if len(_opened) >= MAX_OPENED:
        mine = [k for k, p in _opened.items() if p == pid]
        for k in mine[: max(1, len(mine) // 2)]:
            del _opened[k]
    _opened[fid] = pid


def _wrapped(fn: Callable, orig: Callable) -> Callable:
    fn.__wrapped__ = orig  # type: ignore[attr-defined]
    fn.__name__ = getattr(orig, "__name__", fn.__name__)
    fn.__doc__ = getattr(orig, "__doc__", None)
    return fn


def version_of(h5py: Any) -> int:
    """The h5py major version this module knows how to count, else 0."""
    try:
        major = int(str(getattr(h5py, "__version__", "")).split(".")[0])
    except ValueError:
        return 0
    return major if major in (2, 3) else 0


def patch(h5py: Any, patches: Any) -> bool:
    """Count reads of h5py's datasets (patches.set records each change);
    False, and nothing changed, for an h5py this module does not know."""
    if not version_of(h5py):
        return False
    ds, f = getattr(h5py, "Dataset", None), getattr(h5py, "File", None)
    if ds is None or f is None or not callable(ds.__dict__.get("__getitem__")) or not callable(f.__dict__.get("__init__")):
        return False
    patches.set(f, "__init__", _file_init_wrapper)
    patches.set(ds, "__getitem__", _getitem_wrapper)
    if callable(ds.__dict__.get("read_direct")):
        patches.set(ds, "read_direct", _read_direct_wrapper)
    return True


def _forked() -> None:
    registry.forget()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forked)
