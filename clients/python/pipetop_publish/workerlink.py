"""The path from DataLoader workers to the main process for what workers
measure beyond their busy time: stack samples of their fetches and the
Zarr reads they make.

The main process binds one Unix datagram socket (``/dev/shm`` or the temp
directory, mode 0600, removed at exit). Each worker, once a second, sends
one datagram with the samples folded since its last one and its Zarr
counters since then; sends never block (a full socket drops the datagram,
and the worker says how many it lost in its next one). Datagrams keep
message boundaries, so a torn message cannot happen, and a worker that dies
loses at most its last second. The main process reads the socket on its own
schedule (``Receiver.drain``).
"""

from __future__ import annotations

import atexit
import json
import multiprocessing.util
import os
import socket
import sys
import threading
import time
from typing import Any, Callable, Dict, List, Optional

from . import readwatch as _readwatch
from . import sockets as _sockets
from . import stacks as _stacks

SEND_INTERVAL = 1.0  # seconds between a worker's datagrams
MAX_MESSAGE = 128 << 10  # largest datagram a worker sends

_PREFIX = "pipetop-workers-"  # then the pid and .sock
_receiver: Optional["Receiver"] = None  # this process's, once made
_receiver_failed = False


def receiver() -> Optional["Receiver"]:
    """This process's Receiver, made on the first call (by the first
    multi-process DataLoader iterator, or the collector); None when no
    socket can be made (said once on stderr)."""
    global _receiver, _receiver_failed
    if _receiver is not None and _receiver.pid == os.getpid():
        return _receiver
    if _receiver_failed:
        return None
    try:
        _receiver = Receiver()
    except OSError as e:
        _receiver_failed = True
        sys.stderr.write("pipetop: no DataLoader worker statistics beyond busy time: %s\n" % (e,))
        return None
    return _receiver


def _close_at_exit() -> None:
    """Close this process's Receiver at exit. Registered when this module
    is imported, before the run's summary is (atexit runs the newest
    first), so the summary's last drain still gets the datagrams workers
    sent on their way out."""
    if _receiver is not None:
        _receiver.close()


atexit.register(_close_at_exit)


def receiver_path() -> Optional[str]:
    """The path workers of this process send to; None without a Receiver."""
    r = receiver()
    return r.path if r is not None else None


class Receiver:
    """The main process's end: a bound, non-blocking datagram socket."""

    def __init__(self) -> None:
        base = _sockets.shm_dir()
        _sockets.sweep_dead(base, _PREFIX)
        self.path = os.path.join(base, "%s%d.sock" % (_PREFIX, os.getpid()))
        self.pid = os.getpid()
        try:
            os.unlink(self.path)  # a stale one of a process with our pid
        except OSError:
            pass
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        old = os.umask(0o177)
        try:
            self.sock.bind(self.path)
        finally:
            os.umask(old)
        self.sock.setblocking(False)
        try:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        except OSError:
            pass
        self.bad = 0  # datagrams that did not decode

    def drain(self) -> List[Dict[str, Any]]:
        """Every message waiting on the socket, decoded."""
        out = []
        while True:
            try:
                data = self.sock.recv(MAX_MESSAGE + 1)
            except (BlockingIOError, InterruptedError):
                return out
            except OSError:
                return out
            try:
                msg = json.loads(data.decode("utf-8"))
            except (UnicodeDecodeError, ValueError):
                self.bad += 1
                continue
            if isinstance(msg, dict):
                out.append(msg)

    def close(self) -> None:
        """Close and remove the socket (in the process that made it)."""
        if os.getpid() != self.pid:
            return
        try:
            self.sock.close()
        except OSError:
            pass
        try:
            os.unlink(self.path)
        except OSError:
            pass


class Sender:
    """A worker's end: folds its fetch's stack samples and sends them with
    its Zarr counters once a second; ``lost`` counts the samples of
    messages that could not be sent.

    Args:
        path: the main process's Receiver path.
        worker: the worker's id.
        where: the stage of a sample now: None outside a fetch, "" in a
          fetch, workers.SLOW_FETCH in one far slower than the usual.
        rate: stack samples per second (0: counters only).
    """

    def __init__(self, path: str, worker: int, where: Callable[[], Optional[str]], rate: float) -> None:
        self.path = path
        self.worker = worker
        self.rate = rate
        self.lost = 0
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.setblocking(False)
        self.describer = _stacks.Describer()
        self.sampler: Optional[_stacks.StackSampler] = None
        if rate > 0:
            self.sampler = _stacks.StackSampler(threading.get_ident(), _stacks.WORKER, worker,
                                                where, rate)
        self._last = time.time_ns()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="pipetop-worker-link", daemon=True)

    def start(self) -> None:
        """Start sampling and sending; the last second is sent when the
        worker process exits normally."""
        if self.sampler is not None:
            self.sampler.start()
        self._thread.start()
        multiprocessing.util.Finalize(self, self.send, exitpriority=100)

    def _run(self) -> None:
        try:
            while True:
                time.sleep(SEND_INTERVAL)
                self.send()
        except Exception as e:  # noqa: BLE001 - the worker's data is unaffected
            sys.stderr.write("pipetop: worker %d statistics stopped: %r\n" % (self.worker, e))

    def send(self) -> None:
        """Send what was folded and counted since the last send."""
        with self._lock:
            now = time.time_ns()
            rows = self.describer.rows(self.sampler.fold.take()) if self.sampler is not None else {}
            reads = _readwatch.take()
            if not rows and not reads and not self.lost:
                self._last = now
                return
            msg: Dict[str, Any] = {"worker": self.worker, "pid": os.getpid(), "lost": self.lost}
            msg.update(reads)
            if rows:
                msg["stacks"], _ = _stacks.fitted(rows, now, now - self._last, self.rate, MAX_MESSAGE - (32 << 10))
            data = json.dumps(msg, separators=(",", ":")).encode()
            self._last = now
            try:
                self.sock.sendto(data, self.path)
                self.lost = 0
            except OSError:
                # The main process is gone or behind: these samples (and
                # reads) are lost; the next message says how many samples.
                self.lost += sum(r[0] for r in rows.values())
