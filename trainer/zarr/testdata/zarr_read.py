"""Check, with zarr-python, arrays written by the Go package.

usage: zarr_read.py DIR

DIR holds store/ (written by Go), manifest.json and <name>.bin files with
each array's expected C-order bytes. Prints one line per mismatch and exits
1 if there is any; prints "ok N" otherwise.
"""
import json
import os
import sys

import numpy as np
import zarr


def main(d):
    with open(os.path.join(d, "manifest.json")) as f:
        manifest = json.load(f)
    root = zarr.open_consolidated(os.path.join(d, "store"), mode="r")
    bad = 0
    for m in manifest:
        a = root[m["name"]]
        want = np.fromfile(os.path.join(d, m["name"] + ".bin"), dtype=m["dtype"]).reshape(m["shape"])
        got = a[...]
        if a.dtype != np.dtype(m["dtype"]) or list(got.shape) != m["shape"]:
            print(f"{m['name']}: dtype/shape {a.dtype} {got.shape}, want {m['dtype']} {m['shape']}")
            bad += 1
        elif got.tobytes() != want.tobytes():
            print(f"{m['name']}: bytes differ")
            bad += 1
        if "chunks" in m and list(a.chunks) != m["chunks"]:
            print(f"{m['name']}: chunks {a.chunks}, want {m['chunks']}")
            bad += 1
    if bad:
        sys.exit(1)
    print(f"ok {len(manifest)}")


if __name__ == "__main__":
    main(sys.argv[1])
