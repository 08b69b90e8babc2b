"""The batch's trip from DataLoader workers to the main process.

A worker collates a batch and puts ``(index, batch)`` on the iterator's
result queue (a ``multiprocessing`` queue): the tensors' storage goes
through shared memory, the rest (the structure, NumPy arrays, strings)
pickled through a pipe. The main process (or, with ``pin_memory``, its
pin-memory thread) gets it from that queue and rebuilds it. Two things of
that trip are counted here, in the main process, per DataLoader:

* the bytes each batch carries: the batch's structure is walked (dicts,
  lists, tuples; tensors' and NumPy arrays' dtype, shape and size; str and
  bytes by length; other Python objects count 0). A list or tuple longer
  than ``LONG`` items is not walked item by item: its first ``SAMPLE``
  items are, and their bytes scaled to its length (the entry says
  ``estimated``).
* the time to receive a batch: from the moment the queue's reader saw the
  batch waiting (its poll returned) to the queue's ``get`` returning it:
  reading the pickle from the pipe and rebuilding the batch (attaching
  each tensor's shared memory). Waiting for a worker is not in it. With
  ``pin_memory`` this time is spent on the pin-memory thread, beside the
  training thread, rather than inside ``__next__``.

Floating-point images where ``uint8`` would do are named: a float tensor
or array of 3 dimensions or more shaped like images (``...xHxW`` or
``...xHxWxC`` with C in 1..4, H and W at least ``MIN_SIDE``) whose values
are all integers in 0..255 (scale 1) or all multiples of 1/255 in [0, 1]
(scale 255), judged on a sample of ``CHECK_VALUES`` values (``BLOCKS``
runs of contiguous values spread over the tensor) of the first ``CHECKS``
batches that carry it (all must agree); a sample with
fewer than 3 distinct values says nothing. Sending it as uint8 would cut
its bytes by its item size (``uint8_factor``: 4 for float32).

Counting never changes what the queue returns or raises: the user's batch
is returned as it came, and any failure inside the counting is swallowed.
"""

from __future__ import annotations

import math
import sys
import threading
import time
from typing import Any, Callable, Dict, List, Tuple

_now = time.perf_counter_ns

LONG = 32  # a list or tuple longer than this is sampled, not walked
SAMPLE = 8  # the items of a long list or tuple that are walked
DEPTH = 8  # nesting walked at most
MAX_LEAVES = 64  # entries described per batch (the bytes of the rest still count)
MAX_TENSORS = 32  # entries sent in a loader frame, most bytes first
CHECKS = 3  # batches whose float images' values are checked, per key
CHECK_VALUES = 4096  # values of one tensor checked ...
BLOCKS = 8  # ... in this many runs of contiguous values (each a page or two)
MAX_KEYS = 256  # keys judged per DataLoader (a batch keyed by sample ids stops adding)
MIN_SIDE = 16  # an image's H and W at least this
# Queue items that are no batch: a worker's exception, an iterable
# dataset's end, a resume marker.
_NOT_BATCHES = ("ExceptionWrapper", "_IterableDatasetStopIteration", "_ResumeIteration")


class Leaf:
    """One tensor or array of a batch (or the items of a long list)."""

    __slots__ = ("key", "dtype", "shape", "nbytes", "itemsize", "is_float", "obj", "estimated")

    def __init__(self, key: str, dtype: str, shape: Tuple[int, ...], nbytes: int, itemsize: int,
                 is_float: bool, obj: Any, estimated: bool = False) -> None:
        self.key, self.dtype, self.shape, self.nbytes = key, dtype, shape, nbytes
        self.itemsize, self.is_float, self.obj, self.estimated = itemsize, is_float, obj, estimated

    def sig(self) -> Tuple[Any, ...]:
        return (self.key, self.dtype, self.shape, self.nbytes)


# dtype object -> (name, itemsize, is_float), filled as dtypes are seen.
_dtypes: Dict[Any, Tuple[str, int, bool]] = {}


def _dtype_info(dt: Any) -> Tuple[str, int, bool]:
    got = _dtypes.get(dt)
    if got is None:
        name = str(dt)
        if name.startswith("torch."):
            name = name[len("torch."):]
        itemsize = int(getattr(dt, "itemsize", 0) or 0)
        if not itemsize:
            itemsize = _torch_itemsize(dt)
        is_float = bool(getattr(dt, "is_floating_point", False)) or getattr(dt, "kind", "") == "f"
        got = _dtypes[dt] = (name, itemsize, is_float)
    return got


def _torch_itemsize(dt: Any) -> int:
    torch = sys.modules.get("torch")
    try:
        return int(torch.empty((), dtype=dt).element_size()) if torch is not None else 0
    except Exception:  # noqa: BLE001 - an unknown dtype: its bytes are not known
        return 0


class Walker:
    """Walks a batch into its leaves (tensors, arrays) and its total bytes
    (theirs, and str and bytes by length)."""

    def __init__(self) -> None:
        torch = sys.modules.get("torch")
        np = sys.modules.get("numpy")
        self.tensor = getattr(torch, "Tensor", None) if torch is not None else None
        self.ndarray = getattr(np, "ndarray", None) if np is not None else None
        self.leaves: List[Leaf] = []
        self.total = 0
        self.count = 0  # tensors and arrays (a long list's scaled from its first items)

    def walk(self, obj: Any, key: str = "", depth: int = 0) -> None:
        """Add obj's leaves under key."""
        t = type(obj)
        if self.tensor is not None and isinstance(obj, self.tensor):
            name, itemsize, is_float = _dtype_info(obj.dtype)
            shape = tuple(obj.shape)
            self._add(Leaf(key, name, shape, math.prod(shape) * itemsize, itemsize, is_float, obj))
        elif self.ndarray is not None and isinstance(obj, self.ndarray):
            name, itemsize, is_float = _dtype_info(obj.dtype)
            self._add(Leaf(key, name, tuple(obj.shape), int(obj.nbytes), itemsize, is_float, obj))
        elif t is str or t is bytes or t is bytearray:
            self.total += len(obj)
        elif depth >= DEPTH:
            return
        elif isinstance(obj, dict):
            for k, v in obj.items():
                self.walk(v, "%s[%r]" % (key, k), depth + 1)
        elif isinstance(obj, (list, tuple)):
            if len(obj) > LONG:
                self._long(obj, key, depth)
            else:
                for i, v in enumerate(obj):
                    self.walk(v, "%s[%d]" % (key, i), depth + 1)

    def _add(self, leaf: Leaf, count: int = 1) -> None:
        self.total += leaf.nbytes
        self.count += count
        if len(self.leaves) < MAX_LEAVES:
            self.leaves.append(leaf)

    def _long(self, obj: Any, key: str, depth: int) -> None:
        """A long list or tuple: its first SAMPLE items walked, their bytes
        scaled to its length, as one estimated entry."""
        sub = Walker()
        sub.tensor, sub.ndarray = self.tensor, self.ndarray
        for v in obj[:SAMPLE]:
            sub.walk(v, key, depth + 1)
        est = sub.total * len(obj) // SAMPLE
        first = sub.leaves[0] if sub.leaves else None
        if first is None:
            self.total += est
            return
        self._add(Leaf(key + "[*]", first.dtype, (len(obj),), est, first.itemsize, False, None, True),
                  sub.count * len(obj) // SAMPLE)


def image_like(shape: Tuple[int, ...]) -> bool:
    """Whether shape is a batch of images: ...xHxW or ...xHxWxC (C in 1..4)
    with H and W at least MIN_SIDE and 3 dimensions or more."""
    if len(shape) < 3:
        return False
    if shape[-2] >= MIN_SIDE and shape[-1] >= MIN_SIDE:
        return True
    return 1 <= shape[-1] <= 4 and shape[-3] >= MIN_SIDE and shape[-2] >= MIN_SIDE


def uint8_scale(obj: Any) -> int:
    """What a float tensor or array's values say of uint8: 1 when a sample
    holds only integers in 0..255, 255 when only multiples of 1/255 in
    [0, 1], 0 otherwise; -1 when the sample says nothing (fewer than 3
    distinct values, or no sample without a copy)."""
    part = _sample(obj)
    if part is None:
        return -1
    try:
        lo, hi = float(part.min()), float(part.max())
        if lo < 0 or hi > 255:
            return 0
        if len(set(part[::8].tolist())) < 3:
            return -1
        if bool((part == part.round()).all()):
            return 1
        scaled = part * 255
        if hi <= 1 and float(abs(scaled - scaled.round()).max()) <= 1e-3:
            return 255
    except Exception:  # noqa: BLE001 - values that do not compare: not judged
        return -1
    return 0


def _sample(obj: Any) -> Any:
    """CHECK_VALUES values of obj in float64 (a torch tensor or a NumPy
    array as obj is): BLOCKS runs of contiguous values spread evenly over
    it, so the check touches a few pages of memory the main process may not
    have mapped yet, not one page per value; None when obj is empty or not
    contiguous (sampling it would copy it)."""
    try:
        if hasattr(obj, "is_contiguous"):
            if not obj.is_contiguous() or obj.device.type != "cpu":
                return None
            cat = sys.modules["torch"].cat
        elif not obj.flags.c_contiguous:
            return None
        else:
            cat = sys.modules["numpy"].concatenate
        flat = obj.reshape(-1)
        n = int(flat.shape[0])
        if n == 0:
            return None
        run = max(1, CHECK_VALUES // BLOCKS)
        starts = sorted({min(n - 1, i * n // BLOCKS) for i in range(BLOCKS)})
        part = cat([flat[s:s + run] for s in starts])
        return part.double() if hasattr(part, "double") else part.astype("float64")
    except Exception:  # noqa: BLE001 - an object that does not sample: not judged
        return None


class Trip:
    """The trip counters of one DataLoader, in the main process: the
    batches received, their bytes, the time receiving them, the latest
    batch's description and each key's uint8 judgement."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.batches = 0
        self.bytes = 0
        self.tensors = 0  # tensors and arrays, summed over the batches
        self.received = 0  # batches whose receive time was measured
        self.receive_ns = 0
        self.desc: List[Dict[str, Any]] = []
        self._sig: Tuple[Any, ...] = ()
        # key -> [checks done, scale (0: not uint8; -1: nothing said yet)]
        self.checks: Dict[str, List[int]] = {}

    def count(self, item: Any, receive_ns: int) -> None:
        """Count one item the result queue returned (a batch with its
        index; other items are not batches), received in receive_ns (0:
        not measured)."""
        if type(item) is not tuple or len(item) != 2 or item[1] is None:
            return
        data = item[1]
        if type(data).__name__ in _NOT_BATCHES:
            return
        w = Walker()
        w.walk(data)
        sig = tuple(leaf.sig() for leaf in w.leaves)
        with self._lock:
            self.batches += 1
            self.bytes += w.total
            self.tensors += w.count
            if receive_ns > 0:
                self.received += 1
                self.receive_ns += receive_ns
        self._judge(w.leaves)
        if sig != self._sig:
            self._sig = sig
            self._describe(w.leaves)

    def _judge(self, leaves: List[Leaf]) -> None:
        """Check the values of float images whose keys were checked fewer
        than CHECKS times."""
        changed = False
        for leaf in leaves:
            if not leaf.is_float or leaf.itemsize <= 1 or leaf.obj is None or not image_like(leaf.shape):
                continue
            c = self.checks.get(leaf.key)
            if c is None:
                if len(self.checks) >= MAX_KEYS:
                    continue
                c = self.checks[leaf.key] = [0, -1]
            if c[0] >= CHECKS or c[1] == 0:
                continue
            scale = uint8_scale(leaf.obj)
            c[0] += 1
            if scale >= 0:
                c[1] = scale if c[1] in (-1, scale) else 0
            changed = True
        if changed:
            self._sig = ()

    def _describe(self, leaves: List[Leaf]) -> None:
        desc = []
        for leaf in sorted(leaves, key=lambda x: -x.nbytes)[:MAX_TENSORS]:
            d: Dict[str, Any] = {"key": leaf.key, "dtype": leaf.dtype, "shape": list(leaf.shape), "bytes": leaf.nbytes}
            if leaf.estimated:
                d["estimated"] = True
            c = self.checks.get(leaf.key)
            if c is not None and c[1] > 0:
                d["uint8_factor"] = leaf.itemsize
                d["uint8_scale"] = c[1]
            desc.append(d)
        with self._lock:
            self.desc = desc

    def fields(self) -> Dict[str, Any]:
        """The loader frame's batch_trip object ({} before a batch)."""
        with self._lock:
            if not self.batches:
                return {}
            out: Dict[str, Any] = {"batches": self.batches, "bytes_per_batch": self.bytes // self.batches,
                                   "tensors_per_batch": self.tensors // self.batches,
                                   "receive_ns": self.receive_ns // self.received if self.received else 0}
            if self.desc:
                out["tensors"] = list(self.desc)
            return out


def of(loader: Any) -> Trip:
    """loader's Trip, made on the first call (kept on the DataLoader, so
    every epoch's iterator adds to it)."""
    t = getattr(loader, "_pipetop_trip", None)
    if not isinstance(t, Trip):
        t = Trip()
        loader._pipetop_trip = t
    return t


def watch(it: Any, trip: Trip) -> None:
    """Count what a multi-process DataLoader iterator it receives from its
    workers' result queue into trip: the queue's poll and get are wrapped
    on this one queue object (the workers hold their own ends)."""
    q = it._worker_result_queue
    ready = [0]
    q._poll = _poll_wrapper(q._poll, ready)
    q.get = _get_wrapper(q.get, ready, trip)


def _poll_wrapper(orig: Callable, ready: List[int]) -> Callable:
    """The queue's poll: when it says a message waits, remember when."""

    def poll(*args: Any, **kwargs: Any) -> Any:
        r = orig(*args, **kwargs)
        ready[0] = _now() if r else 0
        return r

    return poll


def _get_wrapper(orig: Callable, ready: List[int], trip: Trip) -> Callable:
    """The queue's get: what it returns counted with the time since the
    poll saw it waiting."""

    def get(*args: Any, **kwargs: Any) -> Any:
        item = orig(*args, **kwargs)
        try:
            t1 = _now()
            t0, ready[0] = ready[0], 0
            trip.count(item, t1 - t0 if 0 < t0 <= t1 else 0)
        except Exception:  # noqa: BLE001 - counting is optional; the batch is returned as it came
            pass
        return item

    return get
