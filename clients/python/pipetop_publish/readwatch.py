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

This module only walks them; it knows no format.
"""

from __future__ import annotations

from typing import Any, Dict, List, Tuple

from . import h5watch as _h5watch
from . import videowatch as _videowatch
from . import zarrwatch as _zarrwatch

# The registries by the name their sources go under, on the wire between
# a worker and the main process and in the loader frame.
REGISTRIES: List[Tuple[str, Any]] = [("zarr", _zarrwatch.registry), ("hdf5", _h5watch.registry), ("video", _videowatch.registry)]

# The loader frame's sums over every format.
SUMS = ("bytes_read", "bytes_decoded", "bytes_used", "decode_ns")


def take() -> Dict[str, List[Dict[str, Any]]]:
    """Every format's counters since the last take, by name (formats
    without reads left out)."""
    out = {}
    for name, reg in REGISTRIES:
        got = reg.take()
        if got:
            out[name] = got
    return out


def add_totals(msg: Dict[str, Any]) -> None:
    """Add the counters a worker sent (msg, by format name) to the run's
    totals; unknown names and malformed parts are skipped."""
    for name, reg in REGISTRIES:
        part = msg.get(name)
        if isinstance(part, list):
            reg.add_totals(part)


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
    out["read_amp"] = round(sums["bytes_decoded"] / sums["bytes_used"], 3) if sums["bytes_used"] else 0.0
    return out
