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
  or what ``h5py.File(..., rdcc_nbytes=, rdcc_nslots=)`` set, read from the
  file's access property list when it is opened; from the dataset's own
  for a file not opened through ``h5py.File``) keeps decoded chunks no larger than its size, so
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
one file's state copied from the parent. Files are known by the name HDF5
gives them: the last ``h5py.File`` opened by that name tells the pid, so a
worker that opens the file itself and still reads through its parent's
handle too is not flagged.

Counting never changes what the user's read returns or raises: a read
that raises is not counted and its exception propagates unchanged. The
counters live in the process that reads (a DataLoader worker sends its
own to the main process, see ``workerlink`` and ``readwatch``); they only
grow, without a lock on the read's path, so reads of one dataset from
several threads at the same instant may lose a read's counts. Counting
costs about 0.5 us a read in isolation, 1.5 us beside a real read here
(see ``bench_h5watch.py``), and about 8 us when the dataset is opened by
name for each read (``f[name][i]``: two HDF5 name lookups identify each
new handle). Under the automatic instrumentation the read wrappers are
put in and out in shares of the time (``readshare``, ``share_format``),
so that cost stays near 1 % of the reads' time however cheap they are.

The chunk cache model sees only the reads counted: a chunk HDF5 kept from
a read made while the wrappers were out counts as decoded when a counted
read touches it again (at most the cache's chunks each time the wrappers
are put back in; none when the chunks do not fit in the cache).
"""

from __future__ import annotations

import collections
import math
import os
import threading
import time
import weakref
from typing import Any, Callable, Dict, List, Optional, Tuple

from . import readshare
from .zarrwatch import _axes, _int_list, _is_int, add_delta, chunks_touched, wrapped

_now = time.perf_counter_ns
MAX_DATASETS = 64  # datasets counted per process; reads of others are not
MAX_MODELLED = 1024  # chunks one read may touch and still go through the cache model
MAX_HANDLES = 4096  # open dataset handles remembered per process
PRUNE_HANDLES = 256  # the dead handles are dropped from this many (or twice the live ones)
# The cost of calling a Python wrapper instead of h5py's method beside a
# real read (what the wrapper's own clock cannot see; the rest of the
# counting it times itself).
CALL_NS = 300
# Counters of one dataset, in this order on the wire between processes.
FIELDS = ("calls", "chunks_decoded", "bytes_decoded", "bytes_returned", "read_ns", "forked_reads")
_CALLS, _CHUNKS, _DECODED, _RETURNED, _READ_NS, _FORKED = range(len(FIELDS))

# HDF5's filter ids (H5Z_FILTER_*) and h5py's LZF.
_FILTERS = {1: "gzip", 4: "szip", 32000: "lzf"}
_SHUFFLE, _FLETCHER32, _NBIT, _SCALEOFFSET = 2, 3, 5, 6

# The last File opened by each name (as HDF5 names the file): the pid
# that opened it and the bytes and slots of its chunk cache (kept across a
# fork: a child reading through a file its parent opened finds the
# parent's pid here); at most MAX_OPENED, this process's oldest dropped
# first.
_opened: Dict[bytes, Tuple[int, int, int]] = {}
MAX_OPENED = 4096


class Counts:
    """One dataset (file and path) of this process: what it is, its
    counters since the last take and the model of its chunk cache."""

    __slots__ = ("key", "info", "c", "taken", "carry", "shape", "chunks", "itemsize", "chunk_bytes", "filtered", "modelled",
                 "cap", "nslots", "down", "rest", "strides", "cache", "live", "rows", "per_chunk", "int_chunk",
                 "params")

    def __init__(self, key: str, info: Dict[str, Any], shape: Tuple[int, ...], chunks: Optional[Tuple[int, ...]],
                 itemsize: int, filtered: bool, cache_bytes: int, nslots: int) -> None:
        self.key, self.info = key, info
        # Counters since the run began (only ever incremented, so a read
        # needs no lock: take() sends what they gained since taken).
        self.c = [0] * len(FIELDS)
        self.taken = [0] * len(FIELDS)
        self.carry = [0.0] * len(FIELDS)  # fractions of scaled takes (readshare.scaled)
        self.shape, self.chunks, self.itemsize, self.filtered = shape, chunks, itemsize, filtered
        self.strides = _strides(shape)
        self.chunk_bytes = math.prod(chunks) * itemsize if chunks else 0
        n = [-(-s // c) for s, c in zip(shape, chunks)] if chunks else []
        self.down = _strides(tuple(n))  # linear chunk index = sum(coord * down)
        self.rest = _rest_offsets(n, self.down) if n else [0]
        # dset[i] touches one chunk when the chunks span the other axes:
        # chunk i // per_chunk of rows.
        self.rows = shape[0] if shape else 0
        self.per_chunk = chunks[0] if chunks and len(self.rest) == 1 and self.rows else 0
        # The modelled cache: each slot that holds a chunk, least recently
        # used first, and the chunk it holds (a slot holds one chunk, as in
        # HDF5, so slots are the keys).
        self.cache: "collections.OrderedDict[int, int]" = collections.OrderedDict()
        self.live: List[Any] = []  # weak references to its open handles
        self.params = (-1, -1)  # the cache's bytes and slots when last opened
        self.opened(cache_bytes, nslots)

    def opened(self, cache_bytes: int, nslots: int) -> None:
        """The dataset was opened (again) with a chunk cache of cache_bytes
        and nslots slots: the model starts empty, as HDF5's cache does."""
        self.cache.clear()
        if (cache_bytes, nslots) == self.params:
            return  # as last opened (f[name][i] opens it on every read)
        self.params = (cache_bytes, nslots)
        fits = bool(self.chunks) and 0 < self.chunk_bytes <= cache_bytes and nslots > 0
        # Chunked reads go through the chunks (and the cache model) when
        # filtered or cacheable; otherwise HDF5 reads the extent in place.
        self.modelled = bool(self.chunks) and (self.filtered or fits)
        self.cap = min(nslots, cache_bytes // self.chunk_bytes) if fits else 0
        self.nslots = max(1, nslots)
        # Rows per chunk when dset[i] decodes one chunk through the model
        # (the int path of read and of the Dataset.__getitem__ wrapper).
        self.int_chunk = self.per_chunk if self.modelled else 0

    def read(self, sel: Any, returned: int, dt: int, forked: bool) -> None:
        """Count one read of sel that returned bytes in dt ns. Reads of
        one dataset from several threads at the same instant may lose one
        read's counts (no lock: this is on every read's path)."""
        c = self.c
        if type(sel) is int and self.int_chunk:
            n = self.missed(sel % self.rows // self.int_chunk) if self.cap else 1
            c[_CHUNKS] += n
            c[_DECODED] += n * self.chunk_bytes
        else:
            if _names(sel):
                return  # h5py reads the fields through a second, counted call
            try:
                n, nb = self.decoded(sel)
            except Exception:  # noqa: BLE001 - an unusual selection: as read
                n, nb = 0, returned
            c[_CHUNKS] += n
            c[_DECODED] += nb
        c[_CALLS] += 1
        c[_RETURNED] += returned
        c[_READ_NS] += dt
        if forked:
            c[_FORKED] += 1

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
                n = chunks_touched(_plain(sel), self.shape, self.chunks)  # type: ignore[arg-type]
                return n, n * self.chunk_bytes
        n = self._through_cache(ids) if self.cap else len(ids)
        return n, n * self.chunk_bytes

    def _through_cache(self, ids: List[int]) -> int:
        """How many of the chunks ids the modelled cache does not hold
        (each one is then decoded and kept)."""
        n = 0
        for k in ids:
            n += self.missed(k)
        return n

    def missed(self, k: int) -> int:
        """1 when the modelled cache does not hold chunk k (it is decoded,
        and kept: evicting the chunk in its slot, or else the least
        recently used when the cache is full), else 0 (a hit)."""
        cache = self.cache
        s = k % self.nslots
        old = cache.get(s)
        if old == k:
            cache.move_to_end(s)
            return 0
        if old is None:
            if len(cache) >= self.cap:
                cache.popitem(last=False)
            cache[s] = k
        else:
            cache[s] = k
            cache.move_to_end(s)
        return 1


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
        self._datasets: Dict[Tuple[bytes, bytes], Counts] = {}
        self._handles: Dict[int, Handle] = {}
        self._prune_at = PRUNE_HANDLES
        # The time the wrappers spent counting, after each read (the
        # wrappers hold the list: forget() zeroes it in place).
        self.own = [0]
        self.totals: Dict[str, List[int]] = {}
        self.infos: Dict[str, Dict[str, Any]] = {}

    def handle(self, dsid: Any) -> Handle:
        """The Handle of dsid (made on its first read)."""
        h = self._handles.get(id(dsid))
        if h is not None and h.ref() is dsid:
            return h
        return self.new_handle(dsid)

    def new_handle(self, dsid: Any) -> Handle:
        """A Handle for dsid, a DatasetID without one (ids are reused once
        a DatasetID is freed: the Handle found by id(dsid) is dsid's only
        while its weak reference still returns dsid). Short: f[name][i]
        makes one on every read."""
        ref = weakref.ref(dsid)
        try:
            names = _names_of(dsid)
            opened = _opened.get(names[0])
        except Exception:  # noqa: BLE001 - an unexpected dataset: not counted
            names = opened = None
        forked = opened is not None and opened[0] != _pid[0]
        with self._lock:
            c = self._datasets.get(names)  # type: ignore[arg-type]
            if c is None:
                c = self._new_counts(dsid, names, opened)
            elif not _alive(c.live):
                # All its handles were closed: HDF5 dropped its cache.
                c.live.clear()
                c.opened(*(opened[1:] if opened is not None else _cache_of(dsid)))
            if c is not None:
                c.live.append(ref)
            h = Handle(ref, c, forked)
            handles = self._handles
            if len(handles) >= self._prune_at:
                # The dead handles go (f[name][i] leaves one a read): soon,
                # so that few objects linger for the garbage collector.
                handles = self._handles = {k: v for k, v in handles.items() if v.ref() is not None}
                self._prune_at = max(PRUNE_HANDLES, 2 * len(handles))
            if len(handles) < MAX_HANDLES:
                handles[id(dsid)] = h
        return h

    def _new_counts(self, dsid: Any, names: Optional[Tuple[bytes, bytes]], opened: Any) -> Optional[Counts]:
        """The counters of a dataset not seen yet (None when it is not
        counted); called under the lock."""
        if names is None or len(self._datasets) >= MAX_DATASETS:
            return None
        try:
            c = self._datasets[names] = _counts(dsid, names, opened)
        except Exception:  # noqa: BLE001 - an unexpected dataset: not counted
            return None
        return c

    def count(self, dsid: Any, sel: Any, returned: int, dt: int) -> None:
        """Count one read of sel through dsid: dt ns, returned bytes."""
        h = self.handle(dsid)
        if h.counts is not None:
            h.counts.read(sel, returned, dt, h.forked)

    def take(self, scale: float = 1.0) -> List[Dict[str, Any]]:
        """Each dataset's counters since the last take (datasets without
        reads left out), times scale (see readshare), with its
        description; they start again from zero."""
        out = []
        with self._lock:
            for c in self._datasets.values():
                now = list(c.c)
                gained = [a - b for a, b in zip(now, c.taken)]
                if not any(gained):
                    continue
                c.taken = now
                if scale != 1.0:
                    gained = readshare.scaled(gained, scale, c.carry)
                if any(gained):
                    out.append({"key": c.key, "info": c.info, "c": gained})
        return out

    def add_totals(self, deltas: List[Dict[str, Any]]) -> None:
        """Add counters taken here or sent by a worker to the run's totals."""
        with self._lock:
            for d in deltas:
                add_delta(self.totals, self.infos, d, len(FIELDS), MAX_DATASETS)

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
        self._prune_at = PRUNE_HANDLES
        self.own[0] = 0

    def cost(self) -> Tuple[int, int]:
        """The counting's cost (the wrappers' own time, measured, and
        CALL_NS a read for the call into them) and the time inside the
        counted reads, in ns, since the run began (see readshare)."""
        reads = inside = 0
        for c in list(self._datasets.values()):
            reads += c.c[_CALLS]
            inside += c.c[_READ_NS]
        return self.own[0] + reads * CALL_NS, inside


registry = Registry()


def _counts(dsid: Any, names: Tuple[bytes, bytes], opened: Optional[Tuple[int, int, int]]) -> Counts:
    """A dataset's description and counters, read from its property lists;
    names are its file's and its own, opened what File.__init__ noted of
    its file."""
    fname, path = os.path.abspath(_text(names[0])), _text(names[1])
    key = fname + ":" + path
    shape = tuple(int(x) for x in dsid.shape)
    dcpl = dsid.get_create_plist()
    chunks = None
    try:
        chunks = tuple(int(x) for x in dcpl.get_chunk())
    except Exception:  # noqa: BLE001 - not chunked
        chunks = None
    filt, opts, others = filters(dcpl)
    nbytes, nslots = opened[1:] if opened is not None else _cache_of(dsid)
    itemsize = int(dsid.dtype.itemsize)
    info = {"file": fname, "path": path, "shape": list(shape), "chunks": list(chunks or ()),
            "dtype": str(dsid.dtype), "itemsize": itemsize, "filter": filt, "filter_opts": opts,
            "shuffle": _SHUFFLE in others, "cache_bytes": int(nbytes), "open_pid": opened[0] if opened is not None else 0}
    filtered = bool(others) or filt != "none"
    return Counts(key, info, shape, chunks, itemsize, filtered, nbytes, nslots)


def _alive(refs: List[Any]) -> bool:
    """Whether any of the weak references refs is alive (the dead ones
    are dropped once there are many)."""
    for r in refs:
        if r() is not None:
            if len(refs) > 16:
                refs[:] = [r for r in refs if r() is not None]
            return True
    return False


def _names_of(dsid: Any) -> Tuple[bytes, bytes]:
    """The names HDF5 gives dsid's file and dsid (two lookups in HDF5)."""
    file_name, object_name = _lookups
    return file_name(dsid), object_name(dsid) or b""


_lookups: List[Callable[[Any], bytes]] = []  # h5f.get_name and h5i.get_name, set by patch


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


def _names(sel: Any) -> bool:
    """Whether sel names compound fields."""
    return isinstance(sel, str) or (isinstance(sel, tuple) and any(isinstance(s, str) for s in sel))


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


def _count_getitem(reg: "Registry", ds: Any, args: Any, out: Any, dt: int) -> None:
    """Count a Dataset.__getitem__ of args that returned out in dt ns
    (Registry.count, with dset[i]'s path inlined: this is on every read's
    path)."""
    dsid = ds._id
    h = reg._handles.get(id(dsid))
    if h is None or h.ref() is not dsid:
        h = reg.new_handle(dsid)
    c = h.counts
    if c is None:
        return
    if type(args) is int and c.int_chunk:
        # dset[i] of one chunk, the loader's usual read.
        n = c.missed(args % c.rows // c.int_chunk) if c.cap else 1
        cc = c.c
        if n:
            cc[_CHUNKS] += 1
            cc[_DECODED] += c.chunk_bytes
        cc[_CALLS] += 1
        cc[_RETURNED] += getattr(out, "nbytes", 0)
        cc[_READ_NS] += dt
        if h.forked:
            cc[_FORKED] += 1
    else:
        c.read(args, getattr(out, "nbytes", 0), dt, h.forked)


def _getitem_wrapper(orig: Callable) -> Callable:
    """Dataset.__getitem__, counted. h5py's reads call each other only to
    read compound fields by name: that outer call is not counted (see
    Counts.read), the one it makes is."""
    reg, now, own = registry, _now, registry.own

    def __getitem__(self: Any, args: Any, new_dtype: Any = None) -> Any:
        t0 = now()
        out = orig(self, args) if new_dtype is None else orig(self, args, new_dtype)
        t1 = now()
        try:
            _count_getitem(reg, self, args, out, t1 - t0)
        except Exception:  # noqa: BLE001 - counting is optional
            pass
        own[0] += now() - t1
        return out

    return wrapped(__getitem__, orig)


def _read_direct_wrapper(orig: Callable) -> Callable:
    """Dataset.read_direct: counted as a read of source_sel."""
    reg, own = registry, registry.own

    def read_direct(self: Any, dest: Any, source_sel: Any = None, dest_sel: Any = None) -> Any:
        t0 = _now()
        out = orig(self, dest, source_sel, dest_sel)
        t1 = _now()
        try:
            sel = Ellipsis if source_sel is None else source_sel
            n = _selected(sel, tuple(self.shape))
            reg.count(self._id, sel, n * int(self.dtype.itemsize), t1 - t0)
        except Exception:  # noqa: BLE001 - counting is optional
            pass
        own[0] += _now() - t1
        return out

    return wrapped(read_direct, orig)


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
                fid = self.id
                _, nslots, nbytes, _ = fid.get_access_plist().get_cache()
                opened(h5py.h5f.get_name(fid), _pid[0], int(nbytes), int(nslots))
            except Exception:  # noqa: BLE001
                pass

    return wrapped(__init__, orig)


def opened(name: bytes, pid: int, cache_bytes: int, nslots: int) -> None:
    """Remember that pid opened the file HDF5 names name, with a chunk
    cache of cache_bytes and nslots slots."""
    if len(_opened) >= MAX_OPENED and name not in _opened:
        mine = [k for k, v in _opened.items() if v[0] == pid]
        for k in mine[: max(1, len(mine) // 2)]:
            del _opened[k]
    _opened[name] = (pid, cache_bytes, nslots)


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
    _lookups[:] = [h5py.h5f.get_name, h5py.h5i.get_name]
    patches.set(f, "__init__", _file_init_wrapper)
    _hot.clear()
    for name, wrap in (("__getitem__", _getitem_wrapper), ("read_direct", _read_direct_wrapper)):
        if callable(ds.__dict__.get(name)):
            orig = ds.__dict__[name]
            patches.set(ds, name, wrap)
            _hot.append((ds, name, orig, ds.__dict__[name]))
    return True


# The per-read wrappers patch put in: (class, name, original, wrapper).
_hot: List[Tuple[Any, str, Any, Any]] = []


def _put(wrapped_in: bool) -> None:
    """Put the per-read wrappers in (True) or the originals back (False)."""
    for cls, name, orig, new in _hot:
        setattr(cls, name, new if wrapped_in else orig)


def share_format() -> readshare.Format:
    """The per-read wrappers as a readshare format."""
    return readshare.Format("hdf5", lambda: _put(True), lambda: _put(False), registry.cost)


_pid = [os.getpid()]  # this process's


def _forked() -> None:
    _pid[0] = os.getpid()
    registry.forget()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forked)
