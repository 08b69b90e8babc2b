"""Agg frames (docs/protocol.md): one interval's steps as counts, a sketch
per column and the waits the wait pattern needs, for viewers whose hello
accepts them. The Go twin is metrics/stage.Aggregator; the layout of a
sketch's bins is the same on both sides."""

from __future__ import annotations

import math
from typing import Any, Dict, List, Optional, Tuple

from .stages import CLASSES, COMM, DATA_WAIT, EVAL, OTHER, SYNC
from .wire import FLOAT32_MAX, Record, dumps

#: Seconds one aggregate stands for.
AGG_INTERVAL = 1.0
#: A data_wait below this (ns) is never a wait: only those at or above it are listed.
WAIT_FLOOR = 2_000_000
#: Most waits one aggregate lists; a full aggregate is sent early.
MAX_AGG_WAITS = 4096
#: The stages besides data_wait whose long times are listed (Go: stage.PauseStages).
PAUSE_STAGES = (OTHER, EVAL, SYNC)
_SUB = 64  # bins per power of two above 2 * _SUB ns


def sketch_index(v: int) -> int:
    """The bin of a time of v ns: exact below 128 ns, then 64 bins per
    power of two."""
    if v < 2 * _SUB:
        return max(v, 0)
    shift = v.bit_length() - 7
    return shift * _SUB + (v >> shift)


class _Column:
    """Counts of one column's times by bin, and their sum."""

    __slots__ = ("n", "sum", "bins")

    def __init__(self) -> None:
        self.n = 0
        self.sum = 0
        self.bins: Dict[int, int] = {}

    def add(self, v: int) -> None:
        i = sketch_index(v)
        bins = self.bins
        bins[i] = bins.get(i, 0) + 1
        self.n += 1
        self.sum += v

    def wire(self) -> Dict[str, Any]:
        flat: List[int] = []
        for i in sorted(self.bins):
            flat.append(i)
            flat.append(self.bins[i])
        out: Dict[str, Any] = {"n": self.n, "sum": self.sum}
        if flat:
            out["bins"] = flat
        return out


class Aggregator:
    """Folds step records of one stage list into the next agg frame."""

    def __init__(self, names: Tuple[str, ...]) -> None:
        self.names = names
        self._comm = [CLASSES.get(n) == CLASSES[COMM] for n in names]
        self._wait = names.index(DATA_WAIT) if DATA_WAIT in names else -1
        self._pause = [i for i, n in enumerate(names) if n in PAUSE_STAGES]
        self._reset()

    def _reset(self) -> None:
        k = len(self.names)
        self.steps = 0
        self._first = self._last = self._t0 = self._t1 = 0
        self._samples = 0
        self._loss: Optional[Tuple[int, float]] = None
        self._wall, self._busy = _Column(), _Column()
        self._cpu = [_Column() for _ in range(k)]
        self._gpu = [_Column() for _ in range(k)]
        self._waits: List[int] = []
        self._pauses: List[int] = []

    def full(self) -> bool:
        return len(self._waits) >= 2 * MAX_AGG_WAITS or len(self._pauses) >= 3 * MAX_AGG_WAITS

    def add(self, r: Record) -> None:
        step, t0, t1, n, loss, cpu, gpu, _ = r
        if self.steps == 0:
            self._first = self._last = step
            self._t0, self._t1 = t0, t1
        else:
            self._first, self._last = min(self._first, step), max(self._last, step)
            self._t0, self._t1 = min(self._t0, t0), max(self._t1, t1)
        self.steps += 1
        self._samples += n
        if loss is not None and math.isfinite(loss) and abs(loss) <= FLOAT32_MAX:
            self._loss = (step, loss)
        self._wall.add(t1 - t0)
        k = len(self.names)
        for i, c in enumerate(cpu[:k]):
            self._cpu[i].add(c)
        if gpu is not None:
            busy = -1
            for i, g in enumerate(gpu):
                if g < 0:
                    continue
                if i < k:
                    self._gpu[i].add(g)
                if i >= k or not self._comm[i]:
                    busy = max(busy, 0) + g
            if busy >= 0:
                self._busy.add(busy)
        w = self._wait
        if 0 <= w < len(cpu) and cpu[w] >= WAIT_FLOOR and not self.full():
            self._waits.append(step)
            self._waits.append(cpu[w])
        for i in self._pause:
            if i < len(cpu) and cpu[i] >= WAIT_FLOOR and not self.full():
                self._pauses.extend((i, step, cpu[i]))

    def take(self) -> Optional[bytes]:
        """The agg frame of the steps added since the last take (None when
        there were none), and a fresh start."""
        return self.take_forms(True, False)[0]

    def take_forms(self, full: bool, brief: bool) -> Tuple[Optional[bytes], Optional[bytes]]:
        """take, in the forms asked for: the agg frame in full, and the brief
        one (Go's stage.Aggregate.Brief: the wall time's bins, every other
        column's count and sum, no waits or pauses) that a viewer showing
        this rank in brief asked for ("agg-brief"); None for a form not
        asked for, and both when there were no steps."""
        if self.steps == 0:
            return None, None
        # The keys in the order Go writes them, which viewers decode fastest.
        agg: Dict[str, Any] = {
            "steps": self.steps, "first": self._first, "last": self._last, "t0": self._t0, "t1": self._t1,
            "n": self._samples,
        }
        if self._loss is not None:
            agg["loss"] = {"step": self._loss[0], "value": self._loss[1]}
        agg["wall"] = self._wall.wire()
        agg["busy"] = self._busy.wire()
        agg["cpu"] = [c.wire() for c in self._cpu]
        if any(c.n for c in self._gpu):
            agg["gpu"] = [c.wire() for c in self._gpu]
        short = None
        if brief:
            short = dict(agg, busy=_counts(agg["busy"]), cpu=[_counts(c) for c in agg["cpu"]])
            if "gpu" in agg:
                short["gpu"] = [_counts(c) for c in agg["gpu"]]
        if self._waits:
            agg["waits"] = self._waits
        if self._pauses:
            agg["pauses"] = self._pauses
        self._reset()
        return (dumps({"type": "agg", "agg": agg}) if full else None,
                dumps({"type": "agg", "agg": short}) if short is not None else None)


def _counts(col: Dict[str, Any]) -> Dict[str, Any]:
    """A column's wire form without its bins."""
    return {"n": col["n"], "sum": col["sum"]}
