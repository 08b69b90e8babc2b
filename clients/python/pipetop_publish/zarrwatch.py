"""Read amplification of the user's own Zarr arrays.

When zarr-python is imported under the automatic instrumentation, reads of
its arrays are counted per array: the outermost ``__getitem__`` (and the
``get_*_selection`` calls, ``oindex``, ``vindex``) on any thread, the bytes
it returned, the chunks decoded for it and their decoded size, the
compressed bytes read, and the time spent. Bytes decoded over bytes returned
is the array's read amplification: ``arr[i]`` of an array chunked 1,000
frames at a time decodes 1,000 frames to return one.

* zarr 2 (checked against zarr-python 2.13): ``Array._process_chunk``, which
  zarr calls once for each chunk it decodes for a read, counts the chunk's
  compressed bytes, its decoded size and the time decoding it.
* zarr 3: its decoding runs through codec pipelines whose internals change
  between releases, so the chunks a read decodes are computed from the
  selection and the array's chunk shape (the inner chunks of a sharded
  array) with public attributes only; compressed bytes and decode time are
  not counted (0). zarr 3 could not be installed where this was written:
  this path is exercised through the same arithmetic on zarr 2 arrays.
* Any other version, or a zarr whose classes do not look as expected, is
  left alone.

The counters live in the process that reads (a DataLoader worker sends its
own to the main process, see ``workerlink``).
"""

from __future__ import annotations

import contextvars
import math
import numbers
import os
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

_now = time.perf_counter_ns
MAX_ARRAYS = 64  # arrays counted per process; reads of others are not
# Counters of one array, in this order on the wire between processes.
FIELDS = ("calls", "chunks_decoded", "bytes_read", "bytes_decoded", "bytes_returned", "decode_ns", "read_ns")
_CALLS, _CHUNKS, _READ, _DECODED, _RETURNED, _DECODE_NS, _READ_NS = range(len(FIELDS))

# The array whose read is in progress in this context (zarr 3 decodes on
# its own event-loop thread, which inherits the context of the call).
_current: contextvars.ContextVar[Optional["Counts"]] = contextvars.ContextVar("pipetop_zarr_read", default=None)


class Counts:
    """What is known about one array and its counters since the last take."""

    __slots__ = ("key", "info", "c", "frame_bytes", "chunk_bytes", "shape", "chunks")

    def __init__(self, key: str, info: Dict[str, Any], shape: Tuple[int, ...], chunks: Tuple[int, ...], itemsize: int) -> None:
        self.key = key
        self.info = info
        self.c = [0] * len(FIELDS)
        self.shape, self.chunks = shape, chunks
        self.chunk_bytes = math.prod(chunks) * itemsize if chunks else itemsize
        self.frame_bytes = math.prod(shape[1:]) * itemsize if shape else itemsize


class Registry:
    """Every counted array of this process, by key (store path + array
    path): the reads since the last take, and the totals of the run (in the
    main process, where the workers' reads are added)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._arrays: Dict[str, Counts] = {}
        self._by_id: Dict[int, Tuple[Any, Optional[Counts]]] = {}
        self.totals: Dict[str, List[int]] = {}
        self.infos: Dict[str, Dict[str, Any]] = {}

    def counts(self, arr: Any, version: int) -> Optional[Counts]:
        """The counters of arr (made on its first read); None when too many
        arrays are counted or arr does not describe itself as expected."""
        got = self._by_id.get(id(arr))
        if got is not None and got[0] is arr:
            return got[1]
        c = None
        try:
            c = self._make(arr, version)
        except Exception:  # noqa: BLE001 - an unexpected array: not counted
            c = None
        if len(self._by_id) < 4096:
            self._by_id[id(arr)] = (arr, c)
        return c

    def _make(self, arr: Any, version: int) -> Optional[Counts]:
        shape = tuple(int(x) for x in arr.shape)
        chunks = tuple(int(x) for x in arr.chunks)
        itemsize = int(arr.dtype.itemsize)
        root, path = store_root(arr, version), str(getattr(arr, "path", "") or "").strip("/")
        key = (root or "<%s>" % type(getattr(arr, "store", None)).__name__) + "/" + path
        with self._lock:
            c = self._arrays.get(key)
            if c is None:
                if len(self._arrays) >= MAX_ARRAYS:
                    return None
                info = {"store": root, "path": path, "shape": list(shape), "chunks": list(chunks),
                        "dtype": str(arr.dtype), "itemsize": itemsize, "zarr_format": version,
                        "replay_buffer": bool(root) and is_replay_buffer(root)}
                c = self._arrays[key] = Counts(key, info, shape, chunks, itemsize)
            return c

    def add(self, c: Counts, i: int, v: int) -> None:
        """Add v to counter i of c."""
        with self._lock:
            c.c[i] += v

    def take(self) -> List[Dict[str, Any]]:
        """Each array's counters since the last take (arrays without reads
        left out), with its description; they start again from zero."""
        out = []
        with self._lock:
            for c in self._arrays.values():
                if any(c.c):
                    out.append({"key": c.key, "info": c.info, "c": c.c})
                    c.c = [0] * len(FIELDS)
        return out

    def add_totals(self, deltas: List[Dict[str, Any]]) -> None:
        """Add counters taken here or sent by a worker to the run's totals."""
        with self._lock:
            for d in deltas:
                add_delta(self.totals, self.infos, d, len(FIELDS), MAX_ARRAYS)

    def loader_fields(self) -> Dict[str, Any]:
        """The loader frame's Zarr fields from the run's totals: each array
        (most bytes decoded first) and the sums over all of them."""
        with self._lock:
            arrays = []
            for key, tot in self.totals.items():
                a = dict(self.infos.get(key, {}))
                a.update(zip(FIELDS, tot))
                ret = tot[_RETURNED]
                a["read_amp"] = round(tot[_DECODED] / ret, 3) if ret else 0.0
                arrays.append(a)
        if not arrays:
            return {}
        arrays.sort(key=lambda a: -a["bytes_decoded"])
        dec = sum(a["bytes_decoded"] for a in arrays)
        ret = sum(a["bytes_returned"] for a in arrays)
        return {"zarr": arrays, "bytes_read": sum(a["bytes_read"] for a in arrays), "bytes_decoded": dec,
                "bytes_used": ret, "decode_ns": sum(a["decode_ns"] for a in arrays),
                "read_amp": round(dec / ret, 3) if ret else 0.0}

    def forget(self) -> None:
        """Start afresh (a forked child counts its own reads only)."""
        self._lock = threading.Lock()
        self._arrays, self._by_id, self.totals, self.infos = {}, {}, {}, {}


registry = Registry()


def wrapped(fn: Callable, orig: Callable) -> Callable:
    """fn, a wrapper of orig, named and documented as orig (its
    ``__wrapped__`` is orig)."""
    fn.__wrapped__ = orig  # type: ignore[attr-defined]
    fn.__name__ = getattr(orig, "__name__", fn.__name__)
    fn.__doc__ = getattr(orig, "__doc__", None)
    return fn


def add_delta(totals: Dict[str, List[int]], infos: Dict[str, Dict[str, Any]], d: Any, fields: int, cap: int) -> Optional[str]:
    """Add one source's counters d ({"key", "info", "c"}: taken here or
    sent by a worker) to the run's totals and infos, by key; returns the
    key, or None for a malformed d or a new source past cap sources. Every
    format's registry (Zarr arrays, HDF5 datasets, video streams) keeps
    its totals so."""
    if not isinstance(d, dict):
        return None
    key, info, c = d.get("key"), d.get("info"), d.get("c")
    if not isinstance(key, str) or not isinstance(c, list) or len(c) != fields:
        return None
    tot = totals.get(key)
    if tot is None:
        if len(totals) >= cap:
            return None
        tot = totals[key] = [0] * fields
        infos[key] = info if isinstance(info, dict) else {}
    for i, v in enumerate(c):
        if isinstance(v, int) and v > 0:
            tot[i] += v
    return key


def store_root(arr: Any, version: int) -> str:
    """The local directory of arr's store, "" when it is not one (memory,
    a remote store)."""
    s = getattr(arr, "store", None)
    for _ in range(4):
        if s is None:
            return ""
        p = getattr(s, "root", None) if version >= 3 else getattr(s, "path", None)
        if p is not None and not isinstance(p, (str, bytes)) and hasattr(p, "__fspath__"):
            p = os.fspath(p)
        if isinstance(p, str) and p and os.path.isdir(p):
            return os.path.abspath(p)
        # ConsolidatedMetadataStore, LRUStoreCache and wrappers like them.
        s = getattr(s, "store", None) or getattr(s, "_store", None)
    return ""


# The arrays of the replay-buffer layout `pipetrain data inspect` reads
# with its default keys (docs/data.md).
REPLAY_BUFFER = ("meta/episode_ends", "data/camera0", "data/camera1", "data/camera2", "data/camera3", "data/state", "data/action")


def is_replay_buffer(root: str) -> bool:
    """Whether root holds the replay-buffer layout `pipetrain data
    inspect` reads with its default keys."""
    return all(os.path.isdir(os.path.join(root, *p.split("/"))) for p in REPLAY_BUFFER)


# ---------------------------------------------------------------------------
# Chunks a selection decodes (zarr 3)


def chunks_touched(sel: Any, shape: Tuple[int, ...], chunks: Tuple[int, ...], mode: str = "basic") -> int:
    """How many chunks a read of sel decodes: per axis, the chunks its
    indices fall in; an orthogonal or basic selection takes the product
    over the axes, a coordinate or mask selection the distinct chunk
    coordinates of its points."""
    nd = len(shape)
    if mode == "mask":
        sel = _nonzero(sel)
        mode = "coordinate"
    if mode == "coordinate":
        coords = sel if isinstance(sel, tuple) else (sel,)
        cols = [_int_list(c, shape[i]) for i, c in enumerate(coords[:nd])]
        if not cols:
            return 0
        n = max(len(c) for c in cols)
        cols = [c * n if len(c) == 1 else c for c in cols]
        return len({tuple(c[j] // chunks[i] for i, c in enumerate(cols)) for j in range(n)})
    per_axis = _axes(sel, nd)
    n = 1
    for s, dim, c in zip(per_axis, shape, chunks):
        n *= _axis_chunks(s, dim, c)
    return n


def _axes(sel: Any, nd: int) -> List[Any]:
    """sel as one selector per axis (Ellipsis expanded, missing axes whole)."""
    if not isinstance(sel, tuple):
        sel = (sel,)
    out: List[Any] = []
    for i, s in enumerate(sel):
        if s is Ellipsis:
            out.extend([slice(None)] * (nd - (len(sel) - 1) - len(out)))
        elif s is not None:
            out.append(s)
    out.extend([slice(None)] * (nd - len(out)))
    return out[:nd]


def _axis_chunks(s: Any, dim: int, c: int) -> int:
    if isinstance(s, slice):
        start, stop, step = s.indices(dim)
        if (step > 0 and stop <= start) or (step < 0 and stop >= start):
            return 0
        if step == 1:
            return (stop - 1) // c - start // c + 1
        return len({i // c for i in range(start, stop, step)})
    if _is_int(s):
        return 1
    return len({i // c for i in _int_list(s, dim)})


def _is_int(s: Any) -> bool:
    """Whether s selects one index: an integer, a NumPy integer or a 0-d
    integer array."""
    if isinstance(s, bool):
        return False
    return isinstance(s, numbers.Integral) or (getattr(s, "ndim", None) == 0 and
                                               getattr(getattr(s, "dtype", None), "kind", "") in ("i", "u"))


def _int_list(s: Any, dim: int) -> List[int]:
    """An index array, list, boolean mask or integer as a list of indices."""
    if _is_int(s):
        return [int(s) % dim if dim else 0]
    vals = s.tolist() if hasattr(s, "tolist") else list(s)
    if vals and isinstance(vals[0], bool):
        return [i for i, b in enumerate(vals) if b]
    return [int(v) % dim if dim else 0 for v in vals]


def _nonzero(mask: Any) -> Tuple[Any, ...]:
    return tuple(mask.nonzero())


# ---------------------------------------------------------------------------
# Patches


def _read_wrapper(orig: Callable, version: int, mode: Optional[str]) -> Callable:
    """An array read: counted when it is the outermost one in progress.
    mode: how zarr 3's decoded chunks are computed from the selection (None
    for zarr 2, whose chunks are counted as they are decoded)."""
    reg = registry

    def read(self: Any, selection: Any = Ellipsis, *args: Any, **kwargs: Any) -> Any:
        if _current.get() is not None:
            return orig(self, selection, *args, **kwargs)
        c = reg.counts(self, version)
        if c is None:
            return orig(self, selection, *args, **kwargs)
        token = _current.set(c)
        t0 = _now()
        try:
            out = orig(self, selection, *args, **kwargs)
        finally:
            _current.reset(token)
        try:
            dt = _now() - t0
            nb = int(getattr(out, "nbytes", 0))
            with reg._lock:
                cc = c.c
                cc[_CALLS] += 1
                cc[_RETURNED] += nb
                cc[_READ_NS] += dt
                if mode is not None:
                    n = chunks_touched(selection, c.shape, c.chunks, mode)
                    cc[_CHUNKS] += n
                    cc[_DECODED] += n * c.chunk_bytes
        except Exception:  # noqa: BLE001 - counting is optional
            pass
        return out

    read.__wrapped__ = orig  # type: ignore[attr-defined]
    read.__name__ = getattr(orig, "__name__", "read")
    read.__doc__ = getattr(orig, "__doc__", None)
    return read


def _process_chunk_wrapper(orig: Callable) -> Callable:
    """zarr 2's Array._process_chunk: one chunk decoded for the read in
    progress (its compressed bytes, its decoded size, the time)."""
    reg = registry

    def _process_chunk(self: Any, out: Any, cdata: Any, *args: Any, **kwargs: Any) -> Any:
        c = _current.get()
        if c is None:
            return orig(self, out, cdata, *args, **kwargs)
        t0 = _now()
        try:
            return orig(self, out, cdata, *args, **kwargs)
        finally:
            try:
                dt = _now() - t0
                size = _size(cdata)
                with reg._lock:
                    cc = c.c
                    cc[_CHUNKS] += 1
                    cc[_READ] += int(size)
                    cc[_DECODED] += c.chunk_bytes
                    cc[_DECODE_NS] += dt
            except Exception:  # noqa: BLE001
                pass

    _process_chunk.__wrapped__ = orig  # type: ignore[attr-defined]
    return _process_chunk


def _size(buf: Any) -> int:
    """The length in bytes of a chunk's stored data, 0 when unknown."""
    n = getattr(buf, "nbytes", None)
    if n is None:
        try:
            n = len(buf)
        except TypeError:
            n = 0
    return int(n)


_READS = {"__getitem__": "basic", "get_basic_selection": "basic", "get_orthogonal_selection": "basic",
          "get_coordinate_selection": "coordinate", "get_mask_selection": "mask"}


def version_of(zarr: Any) -> int:
    """The zarr-python major version this module knows how to count, else 0."""
    try:
        major = int(str(getattr(zarr, "__version__", "")).split(".")[0])
    except ValueError:
        return 0
    return major if major in (2, 3) else 0


def patch(zarr: Any, patches: Any) -> bool:
    """Count reads of zarr's arrays (patches.set records each change);
    False, and nothing changed, for a zarr this module does not know."""
    v = version_of(zarr)
    cls = _array_class(zarr, v)
    if cls is None:
        return False
    names = [n for n in _READS if callable(cls.__dict__.get(n))]
    if "__getitem__" not in names:
        return False
    if v == 2 and not callable(cls.__dict__.get("_process_chunk")):
        return False
    for n in names:
        patches.set(cls, n, lambda o, n=n: _read_wrapper(o, v, None if v == 2 else _READS[n]))
    if v == 2:
        patches.set(cls, "_process_chunk", _process_chunk_wrapper)
    return True


def _array_class(zarr: Any, v: int) -> Any:
    try:
        if v == 2:
            return zarr.core.Array
        if v == 3:
            from zarr.core import array as arraymod  # type: ignore[import-not-found]

            return arraymod.Array
    except Exception:  # noqa: BLE001
        return None
    return None


def _forked() -> None:
    registry.forget()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forked)
