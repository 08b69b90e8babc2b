"""In-process recording for PIPETOP_RECORD=FILE: every frame the publisher
sends, in pipetop's recording format (docs/recording.md) as gzip-compressed
NDJSON, which `pipetop replay`, `summary`, `compare` and `trace` read.

A rank of a multi-rank run (its hello has a world size above 1) writes
FILE-rankR.EXT instead, its entries marked with its rank, since every rank
sees the same environment.

The file is written with os.write through a zlib stream, never a buffered
file object, so a forked child that drops its copy writes nothing. A block
is completed at least once a second: a crash loses at most the last second.
"""

import json
import os
import time
import zlib
from typing import Any, Dict, Optional

FLUSH_EVERY = 1.0  # seconds between completed blocks


def rank_path(path: str, rank: int) -> str:
    """FILE.EXT as rank's file: FILE-rankR.EXT."""
    base, ext = os.path.splitext(path)
    return "%s-rank%d%s" % (base, rank, ext)


class Recording:
    """Appends recording entries to a gzip file."""

    def __init__(self, path: str, hello: Dict[str, Any], socket_path: str) -> None:
        self._rank = b""
        if hello.get("world_size", 1) > 1 and "rank" in hello:
            path = rank_path(path, hello["rank"])
            self._rank = b',"rank":%d' % hello["rank"]
        self.path = path
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        self._z = zlib.compressobj(1, zlib.DEFLATED, 31)  # 31: gzip framing
        self._last = time.monotonic()
        self._pid = os.getpid()
        now = time.time_ns()
        self._entry({"pipetop_recording": 1, "start_ns": now, "source": "in-process"})
        head: Dict[str, Any] = {"t": now, "hello": hello, "socket": socket_path}
        if self._rank:
            head["rank"] = hello["rank"]
        self._entry(head)
        self.flush()

    @classmethod
    def from_env(cls, hello: Dict[str, Any], socket_path: str) -> Optional["Recording"]:
        """A recording to $PIPETOP_RECORD, or None when it is unset. A file
        that cannot be opened is reported once on stderr and skipped: the
        run goes on."""
        path = os.environ.get("PIPETOP_RECORD", "")
        if not path:
            return None
        try:
            return cls(path, hello, socket_path)
        except OSError as e:
            os.write(2, ("pipetop: PIPETOP_RECORD=%s: %s; not recording\n" % (path, e)).encode())
            return None

    def _entry(self, obj: Dict[str, Any]) -> None:
        self._write(json.dumps(obj, separators=(",", ":"), default=str).encode() + b"\n")

    def frame(self, frame: bytes) -> None:
        """Records one encoded protocol frame (ending in a newline)."""
        line = b'{"t":%d%s,"frame":%s}\n' % (time.time_ns(), self._rank, frame.rstrip(b"\n"))
        self._write(line)
        if time.monotonic() - self._last >= FLUSH_EVERY:
            self.flush()

    def _write(self, b: bytes) -> None:
        out = self._z.compress(b)
        if out:
            os.write(self._fd, out)

    def flush(self) -> None:
        """Completes a block, so everything written so far can be read."""
        os.write(self._fd, self._z.flush(zlib.Z_SYNC_FLUSH))
        self._last = time.monotonic()

    def close(self) -> None:
        """Ends the gzip stream and closes the file (in the process that
        opened it only)."""
        if self._fd < 0 or os.getpid() != self._pid:
            return
        os.write(self._fd, self._z.flush(zlib.Z_FINISH))
        os.close(self._fd)
        self._fd = -1
