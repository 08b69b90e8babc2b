#!/usr/bin/env python3
"""Writes a small robomimic-style HDF5 file with h5py: data/demo_K/obs/
agentview_image (FRAMES, SIDE, SIDE, 3) uint8 and data/demo_K/actions
(FRAMES, 7) float32 for each of --demos demonstrations, the images chunked
one trajectory per chunk (the layout robomimic's converters write) or
--chunk-frames frames per chunk, compressed with gzip or lzf. The images
are smooth, so the chunks really compress and decompressing them costs what
it costs on real data.

    python3 make_hdf5.py OUT.hdf5 [--demos 6] [--frames 60] [--side 84]
                         [--chunk-frames 0 (a whole trajectory)] [--compression gzip|lzf]
"""

import argparse

import h5py
import numpy as np

ap = argparse.ArgumentParser()
ap.add_argument("out")
ap.add_argument("--demos", type=int, default=6)
ap.add_argument("--frames", type=int, default=60)
ap.add_argument("--side", type=int, default=84, help="frame height and width")
ap.add_argument("--chunk-frames", type=int, default=0, help="frames per chunk (0: one trajectory per chunk)")
ap.add_argument("--compression", default="gzip", choices=("gzip", "lzf"))
args = ap.parse_args()

side = args.side
yy, xx = np.mgrid[0:side, 0:side].astype(np.float32)
with h5py.File(args.out, "w") as f:
    for k in range(args.demos):
        t = np.arange(args.frames, dtype=np.float32)[:, None, None]
        img = np.stack([np.sin(xx / 5 + t / 9 + c + k) * 100 + 120 + np.cos(yy / 7 - t / 13) * 20 for c in range(3)], axis=-1)
        chunk = args.chunk_frames or args.frames
        g = f.create_group("data/demo_%d" % k)
        g.create_dataset("obs/agentview_image", data=img.astype(np.uint8), chunks=(chunk, side, side, 3), compression=args.compression)
        g.create_dataset("actions", data=np.zeros((args.frames, 7), np.float32))
