"""CUDA event timing of stages, read back without blocking."""

from __future__ import annotations

import collections
from typing import Any, Callable, Deque, Dict, List, Optional, Sequence, Tuple

from .wire import Record

#: One span timed on the GPU: (stage index, start event, end event, sign).
Pair = Tuple[int, Any, Any, int]


class GpuTimer:
    """Times stages on the GPU with CUDA event pairs, read back without
    blocking. A step's record waits until its events completed, or until
    ``max_lag`` newer steps ended, then it is released with GPU times
    (-1 for stages without a finished pair).

    A step's pairs are (stage index, start, end, sign): the elapsed time
    between start and end counts sign times to the stage. ``split`` and
    ``carve`` share events between pairs (a backward's compute ends where
    its wait for the other ranks begins); each event goes back to the pool
    once.

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
        self._open: List[Pair] = []  # this step's pairs
        self._waiting: Deque[Tuple[Record, List[Pair], Any]] = collections.deque()
        self._copy_loss = copy_loss
        self._release_loss = release_loss

    @classmethod
    def for_torch(cls, max_lag: int) -> Optional["GpuTimer"]:
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
        self._open.append((idx, start, ev, 1))

    def split(self, start: Any, mid: Any, first: int, rest: int) -> None:
        """End the span begun with ``start``: up to the event ``mid``
        (recorded with ``begin`` inside it) it counts to stage first, after
        it to stage rest."""
        ev = self._event()
        ev.record()
        self._open += ((first, start, mid, 1), (rest, mid, ev, 1))

    def carve(self, start: Any, end: Any, into: int, out_of: int) -> None:
        """Count the span between two events recorded with ``begin`` to
        stage into, taken out of stage out_of (-1: out of none): a
        collective inside a forward is comm, not forward."""
        self._open.append((into, start, end, 1))
        if out_of >= 0:
            self._open.append((out_of, start, end, -1))

    def remap(self, old: Sequence[str], index: Dict[str, int]) -> None:
        """Re-index this step's open pairs after the stage list changed."""
        self._open = [(index[old[i]], s, e, k) for i, s, e, k in self._open]

    def discard_open(self) -> None:
        """Forget this step's pairs (the step was restarted)."""
        self._release(self._open)
        self._open = []

    def _release(self, pairs: List[Pair]) -> None:
        """Return the pairs' events to the pool, each once."""
        seen = set()
        for _, s, e, _ in pairs:
            for ev in (s, e):
                if id(ev) not in seen:
                    seen.add(id(ev))
                    self._free.append(ev)

    def end_step(self, rec: Record, loss: Any) -> List[Record]:
        """Queue rec with this step's pairs; return the records now ready."""
        pending_loss = None
        if loss is not None and self._copy_loss is not None:
            pending_loss = self._copy_loss(loss)
        self._waiting.append((rec, self._open, pending_loss))
        self._open = []
        out = []
        while self._waiting:
            rec, pairs, pl = self._waiting[0]
            done = all(e.query() for _, _, e, _ in pairs) and (pl is None or pl[1].query())
            if not done and len(self._waiting) <= self._max_lag:
                break
            self._waiting.popleft()
            out.append(self._finish(rec, pairs, pl))
        return out

    def flush(self) -> List[Record]:
        """Release every waiting record with the GPU times known now."""
        out = []
        while self._waiting:
            rec, pairs, pl = self._waiting.popleft()
            out.append(self._finish(rec, pairs, pl))
        return out

    def _finish(self, rec: Record, pairs: List[Pair], pl: Any) -> Record:
        names = rec[7]
        gpu = [-1] * len(names)
        sums: Dict[int, int] = {}
        unknown = set()
        for idx, start, end, sign in pairs:
            if end.query() and start.query():  # split events may sit on two streams
                sums[idx] = sums.get(idx, 0) + sign * int(start.elapsed_time(end) * 1e6)
            else:
                unknown.add(idx)
        self._release(pairs)
        for idx, ns in sums.items():
            if idx not in unknown:
                gpu[idx] = max(0, ns)  # a carve a little over its span (rounding) leaves none
        loss = rec[4]
        if pl is not None:
            host, done = pl
            if done.query():
                loss = float(host[0])
            if self._release_loss is not None:
                self._release_loss(host)
        has_gpu = any(g >= 0 for g in gpu)
        return rec[:4] + (loss, rec[5], tuple(gpu) if has_gpu else None, names)

