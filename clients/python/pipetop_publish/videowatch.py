"""Frames decoded per frame used: the read amplification of the user's videos.

When PyAV (``av``) is imported under the automatic instrumentation, its
video decoding is counted per file and per video stream in the process that
decodes (a DataLoader worker sends its own counters to the main process,
see ``workerlink``):

* ``opens``: ``av.open`` calls that read the file, and the time they took;
  ``torchvision_opens`` those that torchvision's own code made (its
  ``read_video`` opens the file on every call);
* ``calls``: packet iterations started on the file (``container.demux()``,
  which ``container.decode()`` runs once per call): one per read of a
  Dataset that seeks and decodes; ``seeks``: ``container.seek`` calls;
* ``frames_decoded``: frames the decoder output for the stream
  (``Stream.decode``, which ``container.decode()`` and ``packet.decode()``
  run; frames a decoder holds back for reordering count when it outputs
  them); a seek decodes from the keyframe at or before its target, so a
  random frame of a stream with a keyframe every g frames decodes (g+1)/2
  frames on average;
* ``frames_returned``: decoded frames the user's code converted to pixels
  it can use: the outermost ``VideoFrame.to_ndarray``, ``to_image``,
  ``to_rgb`` or ``reformat`` of a frame the decoder output, each frame
  counted once (converting the frame ``to_rgb`` returned, or the same frame
  again, is not another frame). Frames decoded and never converted (skipped
  on the way to a seek target, or read through ``frame.planes``) are not
  returned; a stream whose frames are never converted has no read
  amplification (0: unknown);
* ``keyframes``: the frames flagged ``key_frame`` seen while decoding; the
  keyframe interval (``gop``) is the median distance, in frames, between
  adjacent keyframes seen (0 until two were seen): PyAV 10 gives no GOP
  field for a decoder (``codec_context.gop_size`` is an encoder setting);
* ``decode_ns``: time in ``Stream.decode``; ``convert_ns``: time in the
  conversions above (the pixel-format conversion's cost); ``read_ns``:
  time in ``av.open`` and ``container.seek`` (reading a packet from a
  local file is a copy: it is not timed, which would cost each packet a
  Python generator step);
* ``bytes_read``: the file's packets its video streams decoded;
  ``bytes_decoded``: each decoded
  frame at its decoded size in the pixel format the stream's frames are
  converted to (rgb24, 3 bytes a pixel, until a conversion says
  otherwise); ``bytes_used``: what the conversions returned (an array's
  ``nbytes``; an image or a frame at 3 bytes a pixel). Frames decoded over
  frames returned is the stream's read amplification (``read_amp``).

PyAV's classes are Cython extension types whose attributes cannot be set;
their methods are replaced in the type's own dictionary (and the type's
method cache invalidated), so the user's objects keep their own types and
every call returns and raises what PyAV returns and raises. Checked against
PyAV 10.0 (Debian 12); a PyAV whose classes do not look as expected, or a
Python that is not CPython, is left alone. torchvision's ``read_video``
decodes through the same PyAV calls; its ``VideoReader`` (its own C++
decoder) is not counted.

Every read passes through these wrappers, so they do as little as they
can: a stream's counters are found by (container name, stream index)
without formatting a key, the counters are plain list items (the GIL
keeps each ``+=`` whole; two threads decoding the same stream at the same
instant may lose one update, which the counts can afford), and decoded
frames are remembered in two generations of a plain dict (no lock, no
eviction order). Still, beside the cheapest reads (a small frame from a
container kept open) they cost several per cent: under the automatic
instrumentation they are put in and out in shares of the time
(``readshare``, ``share_format``; ``av.open`` stays wrapped and counts
opens only while they are in).
"""

from __future__ import annotations

import gc
import os
import sys
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

from . import readshare
from .zarrwatch import add_delta, wrapped

_now = time.perf_counter_ns
MAX_STREAMS = 64  # files and streams counted per process; others are not
MAX_KEYFRAMES = 4096  # keyframes remembered per stream
MAX_FRAMES = 256  # decoded frames remembered for their conversions
# What a call into a wrapper costs beside a real read that the wrapper's
# own clock cannot see (the rest of the counting it times itself): PyAV's
# compiled code calling a Python function instead of its own method, and
# the caches the counting costs the next call. bench_video.py's read of a
# container kept open passes 6 wrapped calls: about 15 us in all, of which
# the wrappers' clocks see about 8.
CALL_NS = 1200
# Counters of one file (index -1) or one stream, in this order on the
# wire between processes.
FIELDS = ("opens", "calls", "seeks", "frames_decoded", "frames_returned", "bytes_read", "bytes_decoded",
          "bytes_used", "decode_ns", "convert_ns", "read_ns", "torchvision_opens")
(_OPENS, _CALLS, _SEEKS, _DECODED, _RETURNED, _READ, _BYTES_DECODED, _USED, _DECODE_NS, _CONVERT_NS,
 _READ_NS, _TORCHVISION_OPENS) = range(len(FIELDS))
# The file's counters each of its streams carries in the loader frame.
FILE_FIELDS = (_OPENS, _CALLS, _SEEKS, _READ, _READ_NS, _TORCHVISION_OPENS)

# The states of a remembered frame: decoded and not yet converted;
# converted (returned); made by a conversion (its own conversions add
# their time only).
_DECODED_STATE, _RETURNED_STATE, _MADE_STATE = range(3)
SKIP = object()  # a stream that is not counted
# Whether the per-read wrappers are in (see readshare): av.open, which
# stays wrapped, counts opens only then.
_counting = [True]


class Counts:
    """What is known about one file (index -1) or one of its video streams,
    and its counters since the last take."""

    __slots__ = ("key", "info", "c", "carry", "pixels", "pixel_bytes", "kf_scale", "kf_start", "keyframes", "new_keyframes", "file", "taken")

    def __init__(self, key: str, info: Dict[str, Any]) -> None:
        self.key = key
        self.info = info
        # Counters since the run began (only ever incremented, without a
        # lock: take() sends what they gained since taken).
        self.c = [0] * len(FIELDS)
        self.taken = [0] * len(FIELDS)
        self.carry = [0.0] * len(FIELDS)  # fractions of scaled takes (readshare.scaled)
        self.pixels = int(info.get("width", 0)) * int(info.get("height", 0))
        self.pixel_bytes = 3.0
        self.kf_scale = 0.0  # frames per pts tick
        self.kf_start = 0
        self.keyframes: set = set()
        self.new_keyframes: List[int] = []
        self.file: Optional[Counts] = None  # a stream's file's counters


class Registry:
    """Every counted file and video stream of this process, by key: the
    counters since the last take, and the totals of the run (in the main
    process, where the workers' counters are added)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: Dict[str, Counts] = {}
        # The wrappers hold these dicts: forget() clears them in place.
        self.files: Dict[str, Counts] = {}  # by container name
        self.streams: Dict[Tuple[str, int], Any] = {}  # Counts, or SKIP, by (container name, stream index)
        # Decoded frames by id, for their conversions: the newest frames,
        # and the generation before them (at least MAX_FRAMES frames are
        # remembered; no lock, no eviction order to keep).
        self.frames: Dict[int, Tuple[Any, ...]] = {}
        self.older: Dict[int, Tuple[Any, ...]] = {}
        # The time the wrappers spent counting, after each call.
        self.own = [0]
        self.totals: Dict[str, List[int]] = {}
        self.infos: Dict[str, Dict[str, Any]] = {}
        self.keyframes: Dict[str, set] = {}

    def file_counts(self, name: Any) -> Optional[Counts]:
        """The counters of the file a container named name reads; None when
        too many are counted."""
        c = self.files.get(name)
        if c is not None:
            return c
        key = "%s#-1" % (name,)
        with self._lock:
            c = self._counts.get(key)
            if c is None and len(self._counts) < MAX_STREAMS:
                c = self._counts[key] = Counts(key, {"file": file_path(name), "stream": -1})
            if c is not None:
                self.files[name] = c
            return c

    def stream_counts(self, stream: Any) -> Optional[Counts]:
        """The counters of a video stream, made on its first decode; None
        for a stream that is not video, one past MAX_STREAMS, or one that
        does not describe itself as expected (remembered as SKIP, so its
        next decodes cost one lookup)."""
        try:
            key = (stream.container.name, stream.index)
        except Exception:  # noqa: BLE001 - an unexpected stream: not counted
            return None
        c = self.streams.get(key)
        if c is None:
            try:
                if stream.type == "video":
                    c = self._make("%s#%d" % key, stream)
            except Exception:  # noqa: BLE001
                c = None
            if c is not None:
                c.file = self.file_counts(key[0])
            if c is None or c.file is None:
                c = SKIP
            if len(self.streams) < 4 * MAX_STREAMS:
                self.streams[key] = c
        return None if c is SKIP else c

    def _make(self, key: str, stream: Any) -> Optional[Counts]:
        cc = stream.codec_context
        rate = stream.average_rate or stream.guessed_rate
        info = {"file": file_path(stream.container.name), "stream": int(stream.index), "codec": str(cc.name),
                "width": int(cc.width), "height": int(cc.height), "rate": round(float(rate), 3) if rate else 0.0,
                "frames": int(stream.frames or 0)}
        with self._lock:
            c = self._counts.get(key)
            if c is None:
                if len(self._counts) >= MAX_STREAMS:
                    return None
                c = Counts(key, info)
                if rate and stream.time_base:
                    c.kf_scale = float(stream.time_base * rate)
                c.kf_start = int(stream.start_time or 0)
                self._counts[key] = c
            return c

    def decoded(self, c: Counts, frames: List[Any]) -> None:
        """Count the frames a Stream.decode of c's stream output, and
        remember them for their conversions."""
        c.c[_DECODED] += len(frames)
        seen = self.frames
        if len(seen) >= MAX_FRAMES:
            older = self.older
            older.clear()
            older.update(seen)
            seen.clear()
        for f in frames:
            pts = f.pts
            seen[id(f)] = (c, pts, _DECODED_STATE, 0, 0, 0, -1)
            if f.key_frame and pts is not None and c.kf_scale and len(c.keyframes) < MAX_KEYFRAMES:
                i = round((pts - c.kf_start) * c.kf_scale)
                if i not in c.keyframes:
                    c.keyframes.add(i)
                    c.new_keyframes.append(i)

    def converted(self, frame: Any, out: Any, t0: int, t1: int) -> None:
        """Count a conversion of frame that returned out, from t0 to t1 ns,
        when the decoder output frame here (or a conversion made it).

        A conversion that another one made inside itself (to_ndarray
        calls reformat) ends after the outer one began: the outer one then
        adds only the time the inner one did not, and its own output
        replaces the inner one's in the bytes used."""
        key = id(frame)
        got = self.frames.get(key) or self.older.get(key)
        if got is None or got[1] != frame.pts:
            return
        c, pts, state, end, dt_in, _, counted_in = got
        cc = c.c
        dt = t1 - t0
        n = counted = -1
        if state == _DECODED_STATE:
            n = counted = out_bytes(out)
            cc[_RETURNED] += 1
            cc[_USED] += n
            cc[_CONVERT_NS] += dt
        elif end >= t0:  # the conversion made inside this one
            cc[_CONVERT_NS] += dt - dt_in
            if counted_in >= 0:
                n = counted = out_bytes(out)
                cc[_USED] += n - counted_in
        else:  # the same frame converted again
            cc[_CONVERT_NS] += dt
        if counted > 0 and cc[_RETURNED] == 1 and frame.width and frame.height:
            c.pixel_bytes = counted / (frame.width * frame.height)
        if type(out) is type(frame):
            self.frames[id(out)] = (c, out.pts, _MADE_STATE, t1, dt, n, -1)
        self.frames[key] = (c, pts, _RETURNED_STATE, t1, dt, n, counted)

    def take(self, scale: float = 1.0) -> List[Dict[str, Any]]:
        """Each file's and stream's counters since the last take (those
        without reads left out), times scale (see readshare), with its
        description and the keyframes first seen since then."""
        out = []
        with self._lock:
            for c in self._counts.values():
                c.c[_BYTES_DECODED] = int(c.c[_DECODED] * c.pixels * c.pixel_bytes)
                now = list(c.c)
                gained = [a - b for a, b in zip(now, c.taken)]
                if not any(gained) and not c.new_keyframes:
                    continue
                if scale != 1.0:
                    gained = readshare.scaled(gained, scale, c.carry)
                kf, c.new_keyframes = c.new_keyframes, []
                out.append({"key": c.key, "info": c.info, "c": gained, "kf": kf})
                c.taken = now
        return out

    def add_totals(self, deltas: List[Dict[str, Any]]) -> None:
        """Add counters taken here or sent by a worker to the run's totals."""
        with self._lock:
            for d in deltas:
                if isinstance(d, dict):
                    self._add_total(d)

    def cost(self) -> Tuple[int, int]:
        """The counting's cost (the wrappers' own time, measured, and
        CALL_NS for each call into them: a conversion counts twice, as
        to_ndarray calls reformat; a frame decoded once) and the time
        inside the counted calls, in ns, since the run began (see
        readshare)."""
        calls = inside = 0
        for c in list(self._counts.values()):
            cc = c.c
            calls += cc[_OPENS] + cc[_CALLS] + cc[_SEEKS] + cc[_DECODED] + 2 * cc[_RETURNED]
            inside += cc[_DECODE_NS] + cc[_CONVERT_NS] + cc[_READ_NS]
        return self.own[0] + calls * CALL_NS, inside

    def _add_total(self, d: Dict[str, Any]) -> None:
        key = add_delta(self.totals, self.infos, d, len(FIELDS), MAX_STREAMS)
        if key is None:
            return
        kf, seen = d.get("kf"), self.keyframes.setdefault(key, set())
        if isinstance(kf, list):
            for i in kf:
                if isinstance(i, int) and len(seen) < MAX_KEYFRAMES:
                    seen.add(i)

    def loader_fields(self) -> Dict[str, Any]:
        """The loader frame's video fields from the run's totals: each video
        stream that decoded frames (most frames decoded first), with its
        file's counters, and the sums over all of them."""
        with self._lock:
            streams = [self._stream_fields(key, tot) for key, tot in self.totals.items()
                       if not key.endswith("#-1") and tot[_DECODED]]
        if not streams:
            return {}
        streams.sort(key=lambda s: -s["frames_decoded"])
        sums = {k: sum(s[k] for s in streams) for k in ("bytes_decoded", "bytes_used", "decode_ns")}
        # A file's packets count once, whatever its streams.
        sums["bytes_read"] = sum({s["file"]: s["bytes_read"] for s in streams}.values())
        used = sums["bytes_used"]
        sums["read_amp"] = round(sums["bytes_decoded"] / used, 3) if used else 0.0
        sums["video"] = streams
        return sums

    def _stream_fields(self, key: str, tot: List[int]) -> Dict[str, Any]:
        s: Dict[str, Any] = {"file": "", "stream": 0, "codec": "", "width": 0, "height": 0, "rate": 0.0, "frames": 0}
        s.update(self.infos.get(key, {}))
        s.update(zip(FIELDS, tot))
        ftot = self.totals.get(key.rsplit("#", 1)[0] + "#-1")
        for i in FILE_FIELDS:
            s[FIELDS[i]] = ftot[i] if ftot else 0
        kf = self.keyframes.get(key, set())
        s["keyframes"] = len(kf)
        s["gop"] = gop_of(kf)
        ret = tot[_RETURNED]
        s["read_amp"] = round(tot[_DECODED] / ret, 3) if ret else 0.0
        return s

    def forget(self) -> None:
        """Start afresh (a forked child counts its own reads only)."""
        self._lock = threading.Lock()
        self._counts = {}
        for d in (self.files, self.streams, self.frames, self.older):
            d.clear()
        self.own[0] = 0
        self.totals, self.infos, self.keyframes = {}, {}, {}


registry = Registry()


def gop_of(keyframes: Any) -> int:
    """The keyframe interval in frames: the median distance between
    adjacent keyframes seen (the lower one of an even count); 0 until two
    were seen."""
    kf = sorted(keyframes)
    gaps = sorted(b - a for a, b in zip(kf, kf[1:]) if b > a)
    return gaps[(len(gaps) - 1) // 2] if gaps else 0


def file_path(name: Any) -> str:
    """A container's name as the file it reads: an absolute path when it
    names a local file, else the name as PyAV gives it ("<none>" for a
    file object)."""
    name = str(name)
    if name and not name.startswith("<") and "://" not in name:
        return os.path.abspath(name)
    return name


def out_bytes(out: Any) -> int:
    """The bytes a conversion returned: an array's nbytes; an image or a
    frame at 3 bytes a pixel."""
    n = getattr(out, "nbytes", None)
    if isinstance(n, int):
        return n
    size = getattr(out, "size", None)  # a PIL image: (width, height)
    if isinstance(size, tuple) and len(size) == 2:
        return 3 * int(size[0]) * int(size[1])
    w, h = getattr(out, "width", 0), getattr(out, "height", 0)
    return 3 * int(w) * int(h) if isinstance(w, int) and isinstance(h, int) else 0


# ---------------------------------------------------------------------------
# Patches


def _open_wrapper(orig: Callable) -> Callable:
    """av.open: a file opened for reading (the time it took)."""
    reg, own = registry, registry.own

    def open(file: Any, mode: Any = None, *args: Any, **kwargs: Any) -> Any:  # noqa: A001 - av.open's name
        if mode not in (None, "r") or not _counting[0]:
            return orig(file, mode, *args, **kwargs)
        t0 = _now()
        out = orig(file, mode, *args, **kwargs)
        t1 = _now()
        try:
            c = reg.file_counts(out.name)
            if c is not None:
                c.c[_OPENS] += 1
                c.c[_READ_NS] += t1 - t0
                # torchvision's readers open the file themselves (read_video
                # on every call): the advice then names them.
                if str(sys._getframe(1).f_globals.get("__name__", "")).startswith("torchvision."):
                    c.c[_TORCHVISION_OPENS] += 1
        except Exception:  # noqa: BLE001 - counting is optional
            pass
        own[0] += _now() - t1
        return out

    return wrapped(open, orig)


def _seek_wrapper(orig: Callable) -> Callable:
    """InputContainer.seek: a seek of the file (the time it took)."""
    files, own = registry.files, registry.own

    def seek(self: Any, *args: Any, **kwargs: Any) -> Any:
        t0 = _now()
        out = orig(self, *args, **kwargs)
        t1 = _now()
        try:
            c = files.get(self.name) or registry.file_counts(self.name)
            if c is not None:
                cc = c.c
                cc[_SEEKS] += 1
                cc[_READ_NS] += t1 - t0
        except Exception:  # noqa: BLE001
            pass
        own[0] += _now() - t1
        return out

    return wrapped(seek, orig)


def _demux_wrapper(orig: Callable) -> Callable:
    """InputContainer.demux: a read of the file starts (PyAV's own packet
    iterator is returned: its packets' bytes count where they are decoded)."""
    files, own = registry.files, registry.own

    def demux(self: Any, *args: Any, **kwargs: Any) -> Any:
        it = orig(self, *args, **kwargs)
        t1 = _now()
        try:
            c = files.get(self.name) or registry.file_counts(self.name)
            if c is not None:
                c.c[_CALLS] += 1
        except Exception:  # noqa: BLE001
            pass
        own[0] += _now() - t1
        return it

    return wrapped(demux, orig)


def _decode_wrapper(orig: Callable) -> Callable:
    """Stream.decode: the packet a video stream's decoder was given, the
    frames it output and the time it took."""
    reg, own = registry, registry.own
    streams = reg.streams

    def decode(self: Any, packet: Any = None) -> Any:
        t0 = _now()
        frames = orig(self, packet)
        t1 = _now()
        try:
            c = streams.get((self.container.name, self.index))
            if c is None:
                c = reg.stream_counts(self)
            if c is not None and c is not SKIP:
                c.c[_DECODE_NS] += t1 - t0
                if packet is not None:
                    c.file.c[_READ] += packet.size
                if frames:
                    reg.decoded(c, frames)
        except Exception:  # noqa: BLE001
            pass
        own[0] += _now() - t1
        return frames

    return wrapped(decode, orig)


def _convert_wrapper(orig: Callable) -> Callable:
    """A VideoFrame conversion (to_ndarray, to_image, to_rgb, reformat): a
    frame returned (see Registry.converted)."""
    reg, own = registry, registry.own

    def convert(self: Any, *args: Any, **kwargs: Any) -> Any:
        t0 = _now()
        out = orig(self, *args, **kwargs)
        t1 = _now()
        try:
            reg.converted(self, out, t0, t1)
        except Exception:  # noqa: BLE001
            pass
        own[0] += _now() - t1
        return out

    return wrapped(convert, orig)


_CONVERSIONS = ("to_ndarray", "to_image", "to_rgb", "reformat")


class TypePatches:
    """Methods replaced in extension types' own dictionaries (their
    attributes cannot be set), undone all together."""

    def __init__(self) -> None:
        self.done: List[Tuple[type, str, Any, Any]] = []

    def set(self, cls: type, name: str, wrap: Callable[[Any], Any]) -> None:
        """Replace cls's own method name by wrap(method); ValueError when
        the type's dictionary cannot be changed."""
        d = type_dict(cls)
        orig = d[name]
        new = wrap(orig)
        d[name] = new
        _modified(cls)
        self.done.append((cls, name, orig, new))
        if getattr(cls, name) is not new:
            raise ValueError("%s.%s did not change" % (cls.__name__, name))

    def put(self, wrapped_in: bool) -> None:
        """Put the wrappers in (True) or the originals back (False), all
        of them, keeping both for the next change."""
        for cls, name, orig, new in self.done:
            type_dict(cls)[name] = new if wrapped_in else orig
            _modified(cls)
        _counting[0] = wrapped_in

    def undo(self) -> None:
        """Put every original back, for good."""
        for cls, name, orig, _ in reversed(self.done):
            try:
                type_dict(cls)[name] = orig
                _modified(cls)
            except Exception:  # noqa: BLE001
                pass
        self.done.clear()
        _counting[0] = True


def type_dict(cls: type) -> Dict[str, Any]:
    """The dictionary behind cls.__dict__ (CPython only)."""
    if sys.implementation.name != "cpython":
        raise ValueError("not CPython")
    refs = gc.get_referents(cls.__dict__)
    if len(refs) != 1 or not isinstance(refs[0], dict):
        raise ValueError("%s: no type dictionary" % cls.__name__)
    return refs[0]


def _modified(cls: type) -> None:
    """Invalidate cls's method cache after a change of its dictionary."""
    import ctypes

    ctypes.pythonapi.PyType_Modified(ctypes.py_object(cls))


type_patches = TypePatches()


def _classes() -> Tuple[Any, Any, Any]:
    """PyAV's input container, stream and video frame classes."""
    from av.container.input import InputContainer  # type: ignore[import-not-found]
    from av.stream import Stream  # type: ignore[import-not-found]
    from av.video.frame import VideoFrame  # type: ignore[import-not-found]

    return InputContainer, Stream, VideoFrame


def version_of(av: Any) -> int:
    """The PyAV major version this module knows how to count, else 0."""
    try:
        major = int(str(getattr(av, "__version__", "")).split(".")[0])
    except ValueError:
        return 0
    return major if 9 <= major <= 16 else 0


def patch(av: Any, patches: Any) -> bool:
    """Count av's video decoding (patches.set records the change of
    av.open; the types' changes are in type_patches); False, and nothing
    changed, for a PyAV this module does not know."""
    if not version_of(av) or not callable(getattr(av, "open", None)):
        return False
    container, stream, frame = _classes()
    want = [(container, "demux"), (container, "seek"), (stream, "decode")] + [(frame, n) for n in _CONVERSIONS]
    if any(not callable(cls.__dict__.get(n)) for cls, n in want):
        return False
    wraps = {"demux": _demux_wrapper, "seek": _seek_wrapper, "decode": _decode_wrapper}
    try:
        for cls, n in want:
            type_patches.set(cls, n, wraps.get(n, _convert_wrapper))
    except Exception:
        type_patches.undo()
        raise
    patches.set(av, "open", _open_wrapper)
    return True


def share_format() -> readshare.Format:
    """The per-read wrappers (all but av.open's) as a readshare format."""
    return readshare.Format("video", lambda: type_patches.put(True), lambda: type_patches.put(False), registry.cost)


def _forked() -> None:
    registry.forget()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forked)
