"""The read counters of every data format a loader's reads are counted in.

Each format's module (``zarrwatch`` for Zarr arrays; others for video and
HDF5 files) keeps a registry of its own sources in the process that reads
them. A registry has the same four calls:

* ``take()``: the sources' counters since the last take, as a list (a
  DataLoader worker sends them to the main process under the format's
  name);
* ``add_totals(deltas)``: add what ``take()`` returned, here or in a
  worker, to the run's totals;
* ``loader_fields()``: the loader frame's fields from the totals: the
  sources under the format's key, and ``bytes_read``, ``bytes_decoded``,
  ``bytes_used`` and ``decode_ns`` summed over them ({} when nothing was
  read);
* ``forget()``: start afresh (a forked child counts its own reads only).

Video and HDF5 reads are counted in shares of the time when they are
cheap (``readshare``): their counters are taken scaled to the whole time,
and the loader frame's ``counted_share`` tells the share counted.

This module only walks them; it knows no format.
"""

from __future__ import annotations

import os
from typing import Any, Dict, List, Tuple

from . import h5watch as _h5watch
from . import readshare as _readshare
from . import videowatch as _videowatch
from . import zarrwatch as _zarrwatch

# The registries by the name their sources go under, on the wire between
# a worker and the main process and in the loader frame.
REGISTRIES: List[Tuple[str, Any]] = [("zarr", _zarrwatch.registry), ("hdf5", _h5watch.registry), ("video", _videowatch.registry)]

# The time that passed and the time counted, in ns, of every take of
# those formats added to the run's totals.
_counted = [0, 0]

# The loader frame's sums over every format.
SUMS = ("bytes_read", "bytes_decoded", "bytes_used", "decode_ns")


def take() -> Dict[str, Any]:
    """Every format's counters since the last take, by name (formats
    without reads left out); the formats counted in shares of the time
    are scaled to all of it, and "counted" tells the time that passed
    and the time they were counted, in ns (see readshare)."""
    out: Dict[str, Any] = {}
    passed, counted = _readshare.switch.counted()
    k = _readshare.scale(passed, counted)
    shared = _readshare.switch.names()
    for name, reg in REGISTRIES:
        got = reg.take(k) if name in shared else reg.take()
        if got:
            out[name] = got
    if passed and any(name in out for name in shared):
        out["counted"] = [passed, counted]
    return out


def add_totals(msg: Dict[str, Any]) -> None:
    """Add the counters a worker sent (msg, by format name) to the run's
    totals; unknown names and malformed parts are skipped."""
    for name, reg in REGISTRIES:
        part = msg.get(name)
        if isinstance(part, list):
            reg.add_totals(part)
    got = msg.get("counted")
    if isinstance(got, list) and len(got) == 2 and all(type(x) is int and x >= 0 for x in got) and got[1] <= got[0]:
        _counted[0] += got[0]
        _counted[1] += got[1]


def add_own() -> None:
    """Add this process's own counters to the run's totals."""
    add_totals(take())


def loader_fields() -> Dict[str, Any]:
    """The loader frame's fields of every format, with the sums over all of
    them and the read amplification they make ({} when nothing was
    read)."""
    out: Dict[str, Any] = {}
    sums = dict.fromkeys(SUMS, 0)
    for name, reg in REGISTRIES:
        f = reg.loader_fields()
        if not f:
            continue
        out[name] = f[name]
        for k in SUMS:
            sums[k] += int(f.get(k, 0))
    if not out:
        return {}
    out.update(sums)
    passed, counted = _counted
    if 0 < counted < passed:
        out["counted_share"] = round(counted / passed, 3)
    out["read_amp"] = round(sums["bytes_decoded"] / sums["bytes_used"], 3) if sums["bytes_used"] else 0.0
    return out


def _forked() -> None:
    _counted[0] = _counted[1] = 0


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forked)
