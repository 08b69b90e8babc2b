"""Which code the time goes to, in the main process of an automatically
instrumented run: the training thread's stack samples (each tagged with the
stage the loop is in), the process's other Python threads (``pythreads``:
their stacks and how much CPU they spent holding the GIL), the samples and
Zarr counters the DataLoader workers send (``workerlink``), a ``stacks``
frame once a second with what came in since the last one (and torch's
thread counts), and the whole run's samples for the end-of-run summary.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Any, Callable, Dict, List, Optional

from . import pythreads as _pythreads
from . import readwatch as _readwatch
from . import stacks as _stacks
from . import stageword as _stageword
from . import workerlink as _workerlink

INTERVAL = 1.0  # seconds between stacks frames


class Collector:
    """Samples the training thread and gathers the workers' messages.

    Args:
        pub: the Publisher the frames go out through (its ``stacks``).
        tid: the training thread's ident.
        where: returns the stage the training thread is in now.
        rate: stack samples per second (0: no samples, Zarr counters only).
    """

    def __init__(self, pub: Any, tid: int, where: Callable[[], str], rate: float) -> None:
        self.pub = pub
        self.rate = rate
        self.sampler = _stacks.StackSampler(tid, _stacks.TRAIN, -1, where, rate) if rate > 0 else None
        self.watch: Optional[_pythreads.ThreadWatch] = None
        if self.sampler is not None:
            self.watch = self.sampler.others = _pythreads.ThreadWatch({tid})
        self.run_threads = _pythreads.Threads()
        self.torch = _pythreads.TorchThreads(sys.modules.get("torch"))
        self._named: set = set()  # pipetop threads named in /proc without a watch
        self.receiver = _workerlink.receiver()
        self.describer = _stacks.Describer()
        self.run = _stacks.Fold(cap=_stacks.MAX_RUN_ROWS)
        self.lost = 0
        self._last = time.time_ns()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="pipetop-hotcode", daemon=True)

    def start(self) -> None:
        """Start sampling and publishing."""
        if self.sampler is not None:
            self.sampler.start()
        self._thread.start()

    def stop(self) -> None:
        """Stop sampling and publishing (gather() still works)."""
        self._stop.set()
        if self.sampler is not None:
            self.sampler.stop()

    def _loop(self) -> None:
        _stacks.name_os_thread(self._thread.name)
        while not self._stop.wait(INTERVAL):
            try:
                self.gather(publish=True)
            except Exception as e:  # noqa: BLE001 - samples are optional; the run goes on
                sys.stderr.write("pipetop: stack samples stopped: %r\n" % (e,))
                return

    def gather(self, publish: bool) -> None:
        """Take what was sampled and sent since the last call into the
        run's totals, and publish it as one stacks frame (publish)."""
        with self._lock:
            rows: Dict[Any, List[int]] = {}
            threads = _pythreads.Threads()
            if self.sampler is not None:
                rows = self.describer.rows(self.sampler.fold.take())
            if not _stageword.inside():
                _pythreads.name_all(self._named)  # pipetop reads the threads from outside, by their OS names
            elif self.watch is not None:
                threads.add(self.describer, *self.watch.take())
            else:
                _pythreads.name_all_own(self._named)
            lost = 0
            for msg in self.receiver.drain() if self.receiver is not None else []:
                body = msg.get("stacks")
                if isinstance(body, dict):
                    for key, (n, ns) in _stacks.rows_of(body).items():
                        row = rows.setdefault(key, [0, 0])
                        row[0] += n
                        row[1] += ns
                _readwatch.add_totals(msg)
                if isinstance(msg.get("lost"), int):
                    lost += max(0, msg["lost"])
            _readwatch.add_own()
            now = time.time_ns()
            interval, self._last = now - self._last, now
            self.lost += lost
            if not rows and not lost:
                if publish and self.torch.counts and not _stageword.inside():
                    # pipetop reads the stacks from outside; torch's thread
                    # counts are what it cannot read there.
                    self.pub.stacks(with_threads(_stacks.payload({}, now, interval, self.rate), threads, self.torch))
                return
            self.run.merge(rows)
            self.run_threads.merge(threads)
            if publish:
                body, _ = _stacks.fitted(rows, now, interval, self.rate, _stacks.MAX_FRAME_BYTES,
                                         {"lost": lost} if lost else None)
                self.pub.stacks(with_threads(body, threads, self.torch))

    def final(self) -> Optional[Dict[str, Any]]:
        """The whole run's samples, as a stacks frame body, for the
        summary; None without any."""
        self.gather(publish=True)
        rows = self.run.snapshot()
        if not rows and self.torch.counts and not _stageword.inside():
            # pipetop adds the samples it read from outside; torch's thread
            # counts are the summary's to give.
            return with_threads(_stacks.payload({}, time.time_ns(), 0, self.rate), self.run_threads, self.torch)
        if not rows:
            return None
        body = _stacks.payload(rows, time.time_ns(), 0, self.rate, max_rows=_stacks.MAX_RUN_ROWS)
        if self.lost:
            body["lost"] = self.lost
        return with_threads(body, self.run_threads, self.torch)


def with_threads(body: Dict[str, Any], threads: _pythreads.Threads, torch: Optional[_pythreads.TorchThreads] = None) -> Dict[str, Any]:
    """body with the other threads' entries and torch's thread counts
    (docs/protocol.md, stacks)."""
    if threads:
        body["threads"] = threads.entries(body)
    if torch is not None:
        body.update(torch.counts)
    return body
