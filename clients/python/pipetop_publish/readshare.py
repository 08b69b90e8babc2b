"""Counting the cheapest reads for a share of the time.

Every counted read of a video frame (PyAV) or an HDF5 dataset (h5py)
passes through Python wrappers. Beside a read of a few hundred
microseconds their cost is a fraction of a per cent, but beside the
cheapest reads (a 96x96 frame from a container kept open, a small 1-frame
HDF5 chunk) it reaches several per cent: each counted call costs a few
microseconds there, most of it cache misses after the read itself
(``bench_video.py``, ``bench_h5watch.py``).

So the formats that register here (``Format``) have their per-read
wrappers put in and taken out by one thread of the process. Each period
(``PERIOD``) they are in for ``share`` of it and out for the rest (while
out they cost nothing). The share starts at 1, everything counted; after
each period in which reads were counted it becomes the share at which
the counting's cost stays at ``BUDGET`` of the time spent in the counted
calls; never below ``MIN_SHARE``. Each format tells that cost: the time
its wrappers spent counting (they time themselves) and a cost per call
their clocks cannot see (measured by the benches above). Reads of a few
hundred microseconds or more stay counted in full.

The counters taken (``take``) are scaled by the time that passed over the
time the wrappers were in since the last take (less the counting's own
estimated cost in that time: counted reads are that much slower, so
fewer of them fit in it), so counts and times stand for the whole time;
ratios (frames decoded per frame returned, bytes decoded per byte
returned, opens per read) are those of the counted reads. ``counted()``
tells both times, which the loader frame carries (``counted_share``).

``PIPETOP_READS_IN_FULL=1`` counts every read, whatever it costs (exact
counts, and ratios over every read rather than a sample of them).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import Callable, List, Optional, Tuple

from . import stacks as _stacks

PERIOD = 1.0  # seconds of one cycle in and out
BUDGET = 0.005  # the counting's estimated cost, over the time in the counted calls
MIN_SHARE = 0.02  # the least share of each period that is counted

THREAD = "pipetop-readshare"  # the thread's name, in threading and the OS
FULL_ENV = "PIPETOP_READS_IN_FULL"  # 1: count every read, whatever it costs

_now = time.monotonic_ns


class Format:
    """The per-read wrappers of one format (name: its registry's in
    readwatch): on() puts them in, off() takes them out, and cost() is
    the cost of the counting (measured and estimated) and the time spent
    inside the counted calls, both in ns, since the run began (only ever
    growing)."""

    def __init__(self, name: str, on: Callable[[], None], off: Callable[[], None],
                 cost: Callable[[], Tuple[int, int]]) -> None:
        self.name, self.on, self.off, self.cost = name, on, off, cost


class Switch:
    """Puts the registered formats' wrappers in and out (see the module's
    documentation) and keeps the time they were in."""

    def __init__(self) -> None:
        self.formats: List[Format] = []
        self.share = 1.0
        self._lock = threading.Lock()
        self._in = True  # the wrappers are in
        self._in_since = _now()
        self._in_ns = 0  # time in (less the counting's cost), before _in_since
        self._cost_in = 0  # the formats' cost at _in_since
        self._taken = (self._in_since, 0)  # (clock, time in) at the last take
        self._cost = (0, 0)  # the formats' cost() summed at the last decision
        self._thread: Optional[threading.Thread] = None
        self._stop = threading.Event()

    def register(self, f: Format) -> None:
        """Count f's reads in shares of the time from now on (the thread
        starts with the first format), or all the time when FULL_ENV is
        1."""
        with self._lock:
            self.formats.append(f)
            if self._in:
                f.on()
            else:
                f.off()
        if self._thread is None and os.environ.get(FULL_ENV, "") != "1":
            self._start()

    def names(self) -> List[str]:
        """The registered formats' names (a registry's in readwatch)."""
        return [f.name for f in self.formats]

    def _start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=THREAD, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        _stacks.name_os_thread(THREAD)  # pipetop's own: never the run's
        stop = self._stop
        try:
            while not stop.wait(self.share * PERIOD):
                if self.share < 1:
                    self._set(False)
                    if stop.wait((1 - self.share) * PERIOD):
                        break
                self.share = self.next_share()
                self._set(True)
        except Exception as e:  # noqa: BLE001 - the reads go on, counted in full
            sys.stderr.write("pipetop: read counting in shares stopped: %r\n" % (e,))
        self._set(True)

    def stop(self) -> None:
        """Stop the thread (a bench's or a test's switch), the wrappers in."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def next_share(self) -> float:
        """The share that keeps the counting's estimated cost at BUDGET of
        the time in the calls counted since the last decision (the share
        unchanged when none were)."""
        cost = inside = 0
        for f in self.formats:
            c, i = f.cost()
            cost, inside = cost + c, inside + i
        last, self._cost = self._cost, (cost, inside)
        cost, inside = cost - last[0], inside - last[1]
        if cost <= 0 or inside <= 0:
            return self.share
        return min(1.0, max(MIN_SHARE, BUDGET * inside / cost))

    def _set(self, on: bool) -> None:
        with self._lock:
            if on == self._in:
                return
            t = _now()
            for f in self.formats:
                f.on() if on else f.off()
            if on:
                self._in_since, self._cost_in = t, self._costs()
            else:
                self._in_ns += self._window(t)
            self._in = on

    def _costs(self) -> int:
        """The formats' estimated counting cost so far, in ns."""
        return sum(f.cost()[0] for f in self.formats)

    def _window(self, t: int) -> int:
        """The time the wrappers have been in since they were last put in,
        less the counting's estimated cost in it: the time the reads made
        in it would have taken uncounted."""
        return max(0, t - self._in_since - max(0, self._costs() - self._cost_in))

    def counted(self) -> Tuple[int, int]:
        """The time that passed and the time the wrappers were in (less
        the counting's own estimated cost in it), in ns, since the last
        call (both 0 in a process that registered nothing)."""
        with self._lock:
            t = _now()
            total_in = self._in_ns + (self._window(t) if self._in else 0)
            (t0, in0), self._taken = self._taken, (t, total_in)
        if not self.formats:
            return 0, 0
        return t - t0, max(0, total_in - in0)

    def forked(self) -> None:
        """In a forked child: the parent's thread is gone; count afresh,
        in full at first, with a thread of its own."""
        self._lock = threading.Lock()
        self._stop = threading.Event() if not self._stop.is_set() else self._stop
        self.share = 1.0
        for f in self.formats:
            f.on()
        # Every format's registry starts afresh in the child too: costs from 0.
        self._in, self._in_since, self._in_ns, self._cost_in = True, _now(), 0, 0
        self._taken, self._cost = (self._in_since, 0), (0, 0)
        running, self._thread = self._thread is not None and not self._stop.is_set(), None
        if running:
            self._start()


switch = Switch()


def scaled(gained: List[int], k: float, carry: List[float]) -> List[int]:
    """gained times k, as whole counts, rounded; each counter's remainder
    is carried (in carry, one per counter) to its next take, so that a
    run's totals stay within half a count of the scaled sum."""
    out = []
    for i, g in enumerate(gained):
        x = g * k + carry[i]
        n = round(x)
        carry[i] = x - n
        out.append(n)
    return out


def scale(passed: int, counted: int) -> float:
    """What counters gained while counted ns of passed were counted are
    multiplied by to stand for all of it (1 when all was)."""
    return passed / counted if 0 < counted < passed else 1.0


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=switch.forked)
