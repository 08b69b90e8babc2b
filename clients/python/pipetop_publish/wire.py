"""pipetop's wire format, protocol v1 (docs/protocol.md): frame limits,
the encoding of the frames a trainer sends and the decoding of what a
viewer may send."""

from __future__ import annotations

import json
import math
from typing import Any, Dict, Optional, Sequence, Tuple

#: Protocol version spoken by this module.
PROTOCOL_VERSION = 1
#: Largest frame, newline included, either side accepts.
MAX_FRAME = 1 << 20
#: Most stages one step record can carry ("other" included).
MAX_STAGES = 16
STEPS_PER_FRAME = 512  # keeps a steps frame far below MAX_FRAME
_MAX_CONFIG = 64 << 10  # largest encoded config carried in the hello
FLOAT32_MAX = 3.4028234663852886e38  # the wire loss is a float32


class ProtocolError(ValueError):
    """A viewer sent something that is not a valid protocol v1 frame.

    ``key`` groups refusals for the log: each key is logged once.
    """

    def __init__(self, msg: str, key: str = "malformed") -> None:
        super().__init__(msg)
        self.key = key



_KNOWN_TYPES = ("hello", "stages", "steps", "backfill", "loader", "event", "progress", "stacks", "agg", "drops", "error")


def decode_viewer_line(line: bytes) -> Dict[str, Any]:
    """Decode one line a viewer sent; only a v1 hello frame is accepted.

    Raises ProtocolError naming what was wrong.
    """
    if len(line) > MAX_FRAME:
        raise ProtocolError("frame of %d bytes exceeds the %d-byte limit" % (len(line), MAX_FRAME))
    try:
        frame = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise ProtocolError("decode frame %r: %s" % (_clip(line), e or type(e).__name__)) from None
    if not isinstance(frame, dict):
        raise ProtocolError("frame %r is not a JSON object" % _clip(line))
    typ = frame.get("type")
    if not typ:
        raise ProtocolError("frame %r: missing type" % _clip(line))
    if typ not in _KNOWN_TYPES:
        raise ProtocolError("frame %r: unknown frame type %r" % (_clip(line), typ))
    if typ != "hello":
        raise ProtocolError("viewer sent a %r frame; only hello is accepted" % typ)
    if frame.get("v") != PROTOCOL_VERSION:
        raise ProtocolError(_version_refusal(frame.get("v", 0)), key="version %r" % (frame.get("v"),))
    if not isinstance(frame.get("hello"), dict):
        raise ProtocolError("hello frame without hello")
    return frame


def _version_refusal(peer: Any) -> str:
    """Say which protocol each side speaks and what to do, as the Go server does."""
    advice = "upgrade pipetop"
    if isinstance(peer, int) and peer > PROTOCOL_VERSION:
        advice = (
            "upgrade the trainer's publisher (pipetrain, pipetop_publish.py), "
            "or attach with a pipetop that speaks protocol %d" % PROTOCOL_VERSION
        )
    return "protocol version mismatch: this viewer speaks protocol %s, the trainer speaks %d \u2014 %s" % (
        peer,
        PROTOCOL_VERSION,
        advice,
    )


def _clip(b: bytes, n: int = 80) -> str:
    s = b[:n].decode("utf-8", "replace")
    return s + "..." if len(b) > n else s



#: The longest hold (ms) a viewer's batch_ms may ask for.
MAX_BATCH_MS = 2000


def batch_seconds(ms: Any) -> float:
    """How long a viewer's batch_ms asks frames to be held, in seconds,
    within [0, MAX_BATCH_MS]; anything but a number is 0."""
    if isinstance(ms, bool) or not isinstance(ms, (int, float)):
        return 0.0
    return min(max(float(ms), 0.0), MAX_BATCH_MS) / 1000.0


def dumps(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":"), default=str).encode() + b"\n"


def encode_config(config: Optional[Dict[str, Any]]) -> Any:
    if config is None:
        return None
    try:
        text = json.dumps(config, default=str)
    except (TypeError, ValueError) as e:
        return {"error": "config not encodable: %s" % e}
    if len(text) > _MAX_CONFIG:
        return {"error": "config of %d bytes exceeds %d" % (len(text), _MAX_CONFIG)}
    return json.loads(text)


# A step record as queued by the hot path:
# (step, t0, t1, samples, loss or None, cpu tuple, gpu tuple or None, names).
Record = Tuple[int, int, int, int, Optional[float], Tuple[int, ...], Optional[Tuple[int, ...]], Tuple[str, ...]]


def encode_step(r: Record) -> str:
    step, t0, t1, n, loss, cpu, gpu, _ = r
    parts = ['{"step":%d,"t0":%d,"t1":%d,"n":%d' % (step, t0, t1, n)]
    if loss is not None and math.isfinite(loss) and abs(loss) <= FLOAT32_MAX:
        parts.append(',"loss":%r' % loss)
    parts.append(',"cpu":[%s]' % ",".join(map(str, cpu)))
    if gpu is not None:
        parts.append(',"gpu":[%s]' % ",".join(map(str, gpu)))
    parts.append("}")
    return "".join(parts)


def encode_steps(recs: Sequence[Record], typ: str = "steps") -> bytes:
    """A steps frame of recs (typ "backfill": the steps before a viewer
    attached, sent to it once after the hello)."""
    body = ",".join(encode_step(r) for r in recs)
    return ('{"type":"%s","steps":[%s]}\n' % (typ, body)).encode()

