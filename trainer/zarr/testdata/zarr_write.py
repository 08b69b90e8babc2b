"""Write Zarr v2 arrays with zarr-python for the Go reader's interop test.

usage: zarr_write.py OUT_DIR

Writes OUT_DIR/store (a consolidated group of arrays covering every codec,
shuffle, dtype, chunking and separator the Go package supports),
OUT_DIR/<name>.bin (each array's expected C-order bytes) and
OUT_DIR/manifest.json.
"""
import json
import os
import sys

import numpy as np
import zarr
from numcodecs import GZip, LZ4, Blosc, Zlib, Zstd

CODECS = [("none", None)]
for cname in ["lz4", "lz4hc", "zstd", "blosclz", "zlib"]:
    for shuffle in [Blosc.NOSHUFFLE, Blosc.SHUFFLE, Blosc.BITSHUFFLE]:
        CODECS.append((f"blosc-{cname}-s{shuffle}", Blosc(cname=cname, clevel=5, shuffle=shuffle)))
CODECS.append(("blosc-auto", Blosc(cname="lz4", clevel=3, shuffle=Blosc.AUTOSHUFFLE)))
CODECS.append(("blosc-blocksize", Blosc(cname="lz4", clevel=9, shuffle=1, blocksize=256)))
CODECS += [
    ("zstd1", Zstd(level=1)), ("zstd9", Zstd(level=9)),
    ("lz4a1", LZ4(acceleration=1)), ("lz4a8", LZ4(acceleration=8)),
    ("zlib1", Zlib(level=1)), ("zlib9", Zlib(level=9)),
    ("gzip1", GZip(level=1)), ("gzip9", GZip(level=9)),
]
DTYPES = ["|u1", "|i1", "<u2", ">u2", "<i2", ">i2", "<u4", ">i4", "<i8", ">u8",
          "<f2", ">f2", "<f4", ">f4", "<f8", ">f8", "|b1"]


def data(dtype, shape, seed):
    rng = np.random.default_rng(seed)
    base = np.arange(np.prod(shape)).reshape(shape) % 97
    noise = rng.integers(0, 5, size=shape)
    dt = np.dtype(dtype)
    if dt.kind == "f":
        v = (base + noise).astype(dt) * dt.type(0.25) - dt.type(3)
        v.flat[::13] = np.nan
        return v
    if dt.kind == "b":
        return ((base + noise) % 3 == 0)
    v = base + noise
    if dt.kind == "i":
        v = v - 40
    return v.astype(dt)


def main(out):
    root = zarr.open_group(os.path.join(out, "store"), mode="w")
    manifest = []
    i = 0
    for cname, codec in CODECS:
        for j in range(3):
            dtype = DTYPES[i % len(DTYPES)]
            sep = "/" if i % 2 else "."
            shape, chunks = [(37, 11, 3), (100,), (6, 64, 64, 3)][j], [(8, 5, 3), (17,), (1, 64, 64, 3)][j]
            name = f"{cname}_{j}"
            a = root.create_dataset(name, shape=shape, chunks=chunks, dtype=dtype,
                                    compressor=codec, dimension_separator=sep, fill_value=0)
            v = data(dtype, shape, i)
            a[...] = v
            v.astype(np.dtype(dtype)).tofile(os.path.join(out, name + ".bin"))
            manifest.append({"name": name, "dtype": dtype, "shape": list(shape)})
            i += 1
    # Missing chunks read as the fill value.
    for dtype, fill in [("<i4", 7), ("<f4", "nan"), ("|u1", 255), (">f8", -1.5), ("<i8", -(2**62))]:
        name = f"fill_{dtype[1:]}"
        fv = float(fill) if fill == "nan" else fill
        a = root.create_dataset(name, shape=(10, 10), chunks=(4, 4), dtype=dtype, fill_value=fv)
        a[0:4, 0:4] = 1
        a[8:10, 8:10] = 2
        a[...].tofile(os.path.join(out, name + ".bin"))
        manifest.append({"name": name, "dtype": dtype, "shape": [10, 10]})
    # zarr's default chunking and compressor.
    a = root.create_dataset("default", shape=(500, 64, 64, 3), dtype="|u1")
    v = data("|u1", (500, 64, 64, 3), 99)
    a[...] = v
    v.tofile(os.path.join(out, "default.bin"))
    manifest.append({"name": "default", "dtype": "|u1", "shape": [500, 64, 64, 3],
                     "chunks": list(a.chunks)})
    zarr.consolidate_metadata(root.store)
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f)


if __name__ == "__main__":
    main(sys.argv[1])
