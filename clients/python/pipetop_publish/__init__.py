"""Publish the stage timings of a Python training loop to pipetop.

This module speaks pipetop's protocol v1 (docs/protocol.md) as a trainer: it
listens on a Unix socket, and any number of pipetop viewers attach to it. It
uses only the standard library (Python 3.9+); torch is used only when you ask
for CUDA event timing.

Usage::

    from pipetop_publish import Publisher

    with Publisher(name="my-run", config={"batch": 64}) as pub:
        for batch in loader_iter:             # time spent here is "other"
            with pub.stage("forward"):
                loss = model(batch)
            with pub.stage("backward"):
                loss.backward()
            pub.step(samples=64, loss=loss)   # ends the step

The training loop never waits on a viewer: ``stage`` and ``step`` only append
to a bounded in-memory queue, and a daemon thread encodes and sends frames
with non-blocking sockets. A viewer that stops reading loses whole frames
(counted and reported to it), never the loop's time.
"""


from __future__ import annotations

from .publisher import Publisher
from .sockets import check_peer, socket_dir, socket_name
from .identity import rank_fields
from .stages import CANONICAL
from .wire import MAX_FRAME, MAX_STAGES, PROTOCOL_VERSION, ProtocolError, decode_viewer_line

__all__ = [
    "CANONICAL",
    "MAX_FRAME",
    "MAX_STAGES",
    "PROTOCOL_VERSION",
    "Publisher",
    "ProtocolError",
    "check_peer",
    "decode_viewer_line",
    "rank_fields",
    "socket_dir",
    "socket_name",
]
