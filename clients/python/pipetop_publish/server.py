"""The socket side of a publisher: a daemon thread that accepts viewers,
checks them, and streams frames to each through a bounded queue."""

from __future__ import annotations

import collections
import os
import selectors
import socket
import sys
import threading
import time
from typing import Any, Callable, Deque, Dict, List, Optional, Tuple

from .aggregate import AGG_INTERVAL, Aggregator
from .record import Recording
from .sockets import check_peer, listen, peer_cred
from . import stageword as _stageword
from . import wire
from .wire import MAX_FRAME, STEPS_PER_FRAME, ProtocolError, Record, batch_seconds, decode_viewer_line, dumps, encode_steps

PROGRESS_INTERVAL = 1.0  # seconds between progress frames
# The recent window kept for viewers that attach later (a backfill frame
# after the hello): the steps of the last minute, at most BACKFILL_STEPS.
BACKFILL_STEPS = 2048
BACKFILL_WINDOW_NS = 60_000_000_000
# ... and the stacks frames of the same minute (one a second), for viewers
# that accept stacks frames too.
BACKFILL_STACKS = 64


class Viewer:
    """One attached viewer: a bounded frame queue and a pending byte buffer
    that only ever holds whole frames, so drops never cut a frame."""

    __slots__ = (
        "sock", "queue", "limit", "out", "sent", "inbuf", "dropped", "reported", "blocked", "want_write", "progress",
        "stacks", "aggs", "agg_brief", "agg_on", "batch", "next_write", "mark",
    )

    def __init__(self, sock: socket.socket, limit: int) -> None:
        self.sock = sock
        self.queue: Deque[bytes] = collections.deque()
        self.limit = limit
        self.out = bytearray()
        self.sent = 0
        self.inbuf = bytearray()
        self.dropped = 0
        self.reported = 0
        self.blocked = False
        self.want_write = False
        self.progress = False  # its hello accepts progress frames
        self.stacks = False  # its hello accepts stacks frames
        self.aggs = False  # its hello accepts agg frames
        self.agg_brief = False  # ... brief ones ("agg-brief")
        # It is sent agg frames instead of steps: turned on where an
        # aggregate begins, after its hello, so every step reaches it once.
        self.agg_on = False
        self.batch = 0.0  # seconds its hello asks frames to be held (batch_ms)
        self.next_write = 0.0  # monotonic time before which frames are held
        self.mark = 0  # steps kept before it attached (Server._kept): its backfill

    def offer(self, frame: bytes) -> bool:
        """Queue a frame; False (and counted) when the queue is full."""
        if len(self.queue) >= self.limit:
            self.dropped += 1
            return False
        self.queue.append(frame)
        return True

    def pump(self) -> None:
        """Write as much as the socket takes without blocking.

        Raises OSError when the connection is gone.
        """
        while True:
            if self.sent == len(self.out):
                self.out.clear()
                self.sent = 0
                if not self.queue:
                    self.blocked = False
                    return
                if self.dropped != self.reported:
                    self.reported = self.dropped
                    self.out += dumps({"type": "drops", "dropped": self.dropped})
                while self.queue and len(self.out) < (256 << 10):
                    self.out += self.queue.popleft()
            try:
                n = self.sock.send(memoryview(self.out)[self.sent :])
            except (BlockingIOError, InterruptedError):
                self.blocked = True
                return
            self.sent += n

    def has_output(self) -> bool:
        """Report whether bytes are waiting to be sent."""
        return self.sent < len(self.out) or bool(self.queue)


class Server:
    """Listens on the trainer socket and streams frames to viewers."""

    def __init__(
        self,
        path: str,
        hello: Dict[str, Any],
        names: Tuple[str, ...],
        drain: Callable[[], List[Any]],
        viewer_queue: int,
        flush_interval: float,
        progress: Optional[Callable[[], Dict[str, Any]]] = None,
    ) -> None:
        self.path = path
        self._progress = progress
        self._next_progress = 0.0
        self._hello = hello
        self._names = names  # the list the viewers were last told
        self._drain = drain
        self._viewer_queue = max(1, viewer_queue)
        self._interval = flush_interval
        self._viewers: Dict[int, Viewer] = {}
        self._loader: Optional[bytes] = None  # the latest loader frame
        # The steps drained, for the backfill of viewers that attach later:
        # appended on this thread (never the training thread's), bounded.
        self._history: Deque[Record] = collections.deque(maxlen=BACKFILL_STEPS)
        self._kept = 0  # steps ever appended to _history
        self._stacks: Deque[Dict[str, Any]] = collections.deque(maxlen=BACKFILL_STACKS)  # their stacks frames' bodies
        self._agg: Optional[Aggregator] = None  # while a viewer accepts agg frames
        self._agg_start = 0.0
        self._lock = threading.Lock()  # guards counters read by stats()
        self._accepted = self._refused = self._dropped = self._errors = 0
        self._stop = threading.Event()
        self._deadline = 0.0
        self._uid = os.geteuid()
        self._logged: set = set()  # refusal keys already logged
        self._sock = listen(path)
        self._record = Recording.from_env(dict(hello, stages=list(names)), path)
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._sel = selectors.DefaultSelector()
        self._sel.register(self._sock, selectors.EVENT_READ, None)
        self._sel.register(self._wake_r, selectors.EVENT_READ, None)
        self._thread = threading.Thread(target=self._run, name="pipetop-publisher", daemon=True)
        self._thread.start()

    def stats(self) -> Dict[str, int]:
        """Return the server's counters."""
        with self._lock:
            viewers = list(self._viewers.values())
            return {
                "viewers": len(viewers),
                "accepted": self._accepted,
                "refused": self._refused,
                "dropped": self._dropped,
                "blocked": sum(1 for v in viewers if v.blocked),
                "errors": self._errors,
            }

    def close(self, timeout: float) -> None:
        """Flush, wait up to timeout for readers, then stop and clean up."""
        self._deadline = time.monotonic() + max(0.0, timeout)
        self._stop.set()
        try:
            self._wake_w.send(b"x")
        except OSError:
            pass
        self._thread.join(timeout + 1.0)

    def forget(self) -> None:
        """Close our copies of the sockets in a forked child; the parent's
        remain open, and the socket file is left to the parent."""
        self._record = None  # the parent's file: written by the parent only
        for v in list(self._viewers.values()):
            quiet_close(v.sock)
        for s in (self._sock, self._wake_r, self._wake_w):
            quiet_close(s)
        try:
            self._sel.close()
        except OSError:
            pass

    # -- thread body --------------------------------------------------------

    def _run(self) -> None:
        try:
            next_flush = time.monotonic() + self._interval
            while not self._stop.is_set():
                try:
                    timeout = max(0.0, next_flush - time.monotonic())
                    self._poll(timeout)
                    if time.monotonic() >= next_flush:
                        self._flush()
                        self._send_progress()
                        next_flush = time.monotonic() + self._interval
                except Exception as e:  # noqa: BLE001 - keep serving; the loop must not notice
                    self._failed(e)
            self._poll(0)  # viewers that connected just before close
            self._flush()
            self._send_aggregate()
            # Give viewers until the deadline to read what is left.
            while time.monotonic() < self._deadline and any(v.has_output() for v in self._viewers.values()):
                self._poll(min(0.05, max(0.0, self._deadline - time.monotonic())))
        finally:
            self._shutdown()

    def _failed(self, err: Exception) -> None:
        """Count an unexpected error of the server thread; report the first."""
        with self._lock:
            self._errors += 1
            first = self._errors == 1
        if first:
            sys.stderr.write("pipetop_publish: %s: %r (publishing continues)\n" % (self.path, err))
        time.sleep(0.01)

    def _poll(self, timeout: float) -> None:
        for key, mask in self._sel.select(timeout):
            obj = key.fileobj
            if obj is self._sock:
                self._accept()
            elif obj is self._wake_r:
                try:
                    self._wake_r.recv(64)
                except OSError:
                    pass
            else:
                v = key.data
                if mask & selectors.EVENT_READ:
                    self._read(v)
                if mask & selectors.EVENT_WRITE and v.sock.fileno() in self._viewers:
                    self._write(v)

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                return
            conn.setblocking(False)
            try:
                pid, uid, _ = peer_cred(conn)
                reason = check_peer(uid, pid, self._uid)
            except OSError as e:
                uid, reason = -1, "peer credentials: %s" % e
            if reason is not None:
                with self._lock:
                    self._refused += 1
                self._log_refusal("uid %d" % uid if uid >= 0 else "credentials", reason)
                _send_error(conn, reason)
                quiet_close(conn)
                continue
            v = Viewer(conn, self._viewer_queue)
            v.mark = self._kept  # every step before it went to the viewers before it
            hello = dict(self._hello, stages=list(self._names))
            v.offer(dumps({"type": "hello", "v": wire.PROTOCOL_VERSION, "hello": hello}))
            if self._loader is not None:
                v.offer(self._loader)
            with self._lock:
                self._viewers[conn.fileno()] = v
                self._accepted += 1
            self._sel.register(conn, selectors.EVENT_READ, v)
            self._write(v)

    def _read(self, v: Viewer) -> None:
        try:
            data = v.sock.recv(64 << 10)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            self._drop(v, None)
            return
        if not data:
            self._drop(v, None)
            return
        v.inbuf += data
        while True:
            nl = v.inbuf.find(b"\n")
            if nl < 0:
                if len(v.inbuf) > MAX_FRAME:
                    self._drop(v, "frame exceeds the 1 MiB (%d-byte) limit" % MAX_FRAME, "too large")
                return
            line = bytes(v.inbuf[:nl])
            del v.inbuf[: nl + 1]
            try:
                frame = decode_viewer_line(line)
            except ProtocolError as e:
                self._drop(v, str(e), e.key)
                return
            hello = frame["hello"]
            accepts = hello.get("accepts")
            v.progress = isinstance(accepts, list) and "progress" in accepts
            v.stacks = isinstance(accepts, list) and "stacks" in accepts
            v.aggs = isinstance(accepts, list) and "agg" in accepts
            v.agg_brief = isinstance(accepts, list) and "agg-brief" in accepts
            v.batch = batch_seconds(hello.get("batch_ms"))
            inside = hello.get("stacks_inside")
            if isinstance(inside, str) and inside:
                _stageword.ask_inside(inside[:200])
            if isinstance(accepts, list) and "backfill" in accepts:
                self._backfill(v)

    def _backfill(self, v: Viewer) -> None:
        """Send v, once, the steps kept from before it attached: those of
        the current stage list that ended within BACKFILL_WINDOW_NS of the
        newest of them, oldest first, then (when it accepts them) the
        stacks frames of the same time. Its agg frames, if it takes them,
        begin later, at the next aggregate."""
        mark = v.mark
        v.mark = -1  # sent: a second hello sends nothing
        if mark < 0:
            return
        held = list(self._history)[: max(0, len(self._history) - (self._kept - mark))]
        recs = [r for r in held if r[7] is self._names or r[7] == self._names]
        if recs:
            cut = recs[-1][2] - BACKFILL_WINDOW_NS
            recs = [r for r in recs if r[2] >= cut]
        frames = [encode_steps(recs[i : i + STEPS_PER_FRAME], "backfill") for i in range(0, len(recs), STEPS_PER_FRAME)]
        if v.stacks:
            frames += [dumps({"type": "stacks", "stacks": body}) for body in self._recent_stacks()]
        for frame in frames:
            if not v.offer(frame):
                with self._lock:
                    self._dropped += 1
        self._write(v)

    def _recent_stacks(self) -> List[Dict[str, Any]]:
        """The stacks frames kept that were taken within
        BACKFILL_WINDOW_NS of the newest, oldest first. A viewer that
        accepts stacks was sent none of them: until its hello it accepted
        none, and the frames drained since are sent after this."""
        if not self._stacks:
            return []
        cut = self._stacks[-1].get("t", 0) - BACKFILL_WINDOW_NS
        return [b for b in self._stacks if b.get("t", 0) >= cut]

    def _write(self, v: Viewer) -> None:
        try:
            v.pump()
        except OSError:
            self._drop(v, None)
            return
        want = v.has_output()
        if want != v.want_write:
            v.want_write = want
            events = selectors.EVENT_READ | (selectors.EVENT_WRITE if want else 0)
            self._sel.modify(v.sock, events, v)

    def _log_refusal(self, key: str, reason: str) -> None:
        """Log a refused viewer once per kind of refusal (all are counted)."""
        if key in self._logged or len(self._logged) >= 32:
            return
        self._logged.add(key)
        sys.stderr.write(
            "pipetop_publish: %s: refused a viewer: %s (logged once; later refusals "
            "for this reason are only counted)\n" % (self.path, reason)
        )

    def _drop(self, v: Viewer, reason: Optional[str], key: str = "malformed") -> None:
        """Disconnect a viewer, telling it why when it misbehaved."""
        with self._lock:
            if self._viewers.pop(v.sock.fileno(), None) is None:
                return
            if reason is not None:
                self._refused += 1
                self._log_refusal(key, reason)
        try:
            self._sel.unregister(v.sock)
        except (KeyError, ValueError):
            pass
        if reason is not None:
            _send_error(v.sock, reason)
        _discard_input(v.sock)
        quiet_close(v.sock)

    def _flush(self) -> None:
        items = self._drain()
        self._keep(items)
        if not self._viewers and self._record is None:
            # Nobody to encode for: only keep track of the stage list, which
            # the hello of the next viewer carries.
            for item in reversed(items):
                if item[0] not in ("event", "loader", "stacks"):
                    self._names = item[7]
                    break
            for item in items:
                if item[0] == "loader":
                    self._loader = dumps({"type": "loader", "loader": item[1]})
            return
        batch: List[Record] = []
        for item in items:
            if item[0] == "event":
                self._broadcast_steps(batch)
                _, t, kind, msg = item
                self._broadcast(dumps({"type": "event", "event": {"t": t, "kind": kind, "msg": msg}}))
                continue
            if item[0] == "loader":
                self._broadcast_steps(batch)
                self._loader = dumps({"type": "loader", "loader": item[1]})
                # A rank shown in brief keeps no loader statistics.
                self._broadcast(self._loader, lambda v: not v.agg_brief)
                continue
            if item[0] == "stacks":
                self._broadcast_steps(batch)
                self._broadcast(dumps({"type": "stacks", "stacks": item[1]}), lambda v: v.stacks)
                continue
            if item[7] is not self._names and item[7] != self._names:
                self._broadcast_steps(batch)
                self._send_aggregate()  # of the steps of the old list
                self._names = item[7]
                if self._agg is not None:
                    self._agg = Aggregator(self._names)
                self._broadcast(dumps({"type": "stages", "stages": list(self._names)}))
            batch.append(item)
            self._aggregate(item)
            if len(batch) >= STEPS_PER_FRAME:
                self._broadcast_steps(batch)
        self._broadcast_steps(batch)
        now = time.monotonic()
        if self._agg is not None and now - self._agg_start >= AGG_INTERVAL:
            self._send_aggregate()
        elif self._agg is None and any(v.aggs for v in self._viewers.values()):
            self._agg, self._agg_start = Aggregator(self._names), now
        for v in list(self._viewers.values()):
            if v.has_output() and not v.want_write:
                self._write_due(v, now)

    def _keep(self, items: List[Any]) -> None:
        """Append the step records and the stacks frames among items to
        the history."""
        for item in items:
            if item[0] == "stacks":
                self._stacks.append(item[1])
            elif item[0] not in ("event", "loader"):
                self._history.append(item)
                self._kept += 1

    def _aggregate(self, item: Record) -> None:
        agg = self._agg
        if agg is not None:
            agg.add(item)
            if agg.full():
                self._send_aggregate()

    def _send_aggregate(self) -> None:
        """Send the current aggregate to the viewers that take agg frames
        and start the next one; viewers whose hello accepted agg frames
        since take them from here on. Without such viewers, stop
        aggregating."""
        agg = self._agg
        if agg is None:
            return
        on = [v for v in self._viewers.values() if v.agg_on]
        full, brief = agg.take_forms(any(not v.agg_brief for v in on), any(v.agg_brief for v in on))
        now = self._agg_start = time.monotonic()
        dropped = 0
        for v in self._viewers.values():
            frame = brief if v.agg_brief else full
            if v.agg_on and frame is not None:
                if not v.offer(frame):
                    dropped += 1
                elif not v.want_write:
                    self._write_due(v, now)
            v.agg_on = v.aggs
        if dropped:
            with self._lock:
                self._dropped += dropped
        if not any(v.aggs for v in self._viewers.values()):
            self._agg = None

    def _send_progress(self) -> None:
        """Once a second, tell the viewers that accept it where the loop is."""
        now = time.monotonic()
        if self._progress is None or now < self._next_progress:
            return
        self._next_progress = now + PROGRESS_INTERVAL
        viewers = [v for v in self._viewers.values() if v.progress]
        if not viewers:
            return
        frame = dumps({"type": "progress", "progress": self._progress()})
        for v in viewers:
            if not v.offer(frame):
                with self._lock:
                    self._dropped += 1
            elif not v.want_write:
                self._write_due(v, now)

    def _write_due(self, v: Viewer, now: float) -> None:
        """Start writing v's frames unless its batch holds them a while
        longer; a closing server holds nothing."""
        if now < v.next_write and not self._stop.is_set():
            return
        v.next_write = now + v.batch
        self._write(v)

    def _broadcast_steps(self, batch: List[Record]) -> None:
        """Record batch and send it to the viewers that take steps frames."""
        if not batch:
            return
        if self._record is not None or any(not v.agg_on for v in self._viewers.values()):
            self._broadcast(encode_steps(batch), lambda v: not v.agg_on)
        batch.clear()

    def _broadcast(self, frame: bytes, wants: Optional[Callable[[Viewer], bool]] = None) -> None:
        """Record frame and offer it to every viewer (those wants accepts)."""
        if self._record is not None:
            try:
                self._record.frame(frame)
            except OSError as e:
                sys.stderr.write("pipetop: recording %s stopped: %s\n" % (self._record.path, e))
                self._record = None
        dropped = 0
        for v in self._viewers.values():
            if wants is not None and not wants(v):
                continue
            if not v.offer(frame):
                dropped += 1
        if dropped:
            with self._lock:
                self._dropped += dropped

    def _shutdown(self) -> None:
        if self._record is not None:
            try:
                self._record.close()
            except OSError:
                pass
        for v in list(self._viewers.values()):
            self._drop(v, None)
        self._sel.close()
        quiet_close(self._sock)
        quiet_close(self._wake_r)
        quiet_close(self._wake_w)
        try:
            os.unlink(self.path)
        except OSError:
            pass


def _send_error(sock: socket.socket, reason: str) -> None:
    """Tell a peer why it is being closed, best effort, without blocking."""
    try:
        sock.send(dumps({"type": "error", "error": reason}))
    except OSError:
        pass


def _discard_input(sock: socket.socket) -> None:
    """Read what the peer sent and we did not consume: closing a Unix
    socket with unread input resets the connection, and the peer would lose
    the frames still in its receive buffer."""
    try:
        for _ in range(64):
            if not sock.recv(1 << 16):
                return
    except OSError:
        pass


def quiet_close(sock: socket.socket) -> None:
    try:
        sock.close()
    except OSError:
        pass

