#!/usr/bin/env python3
"""Writes a small replay buffer with zarr-python, in the layout pipetrain
reads (data/camera0..3 (T, 32, 32, 3) uint8, data/state and data/action
(T, 14) float32, meta/episode_ends), chunked the way zarr chunks an array
when told nothing: the classic slow dataset (or --chunk-frames frames per
chunk, whole frames). The images are smooth, so the chunks really compress
and decoding them costs what it costs on real data.

    python3 make_zarr.py OUT.zarr [--frames 4000] [--side 32] [--chunk-frames N]
"""

import argparse

import numpy as np
import zarr

ap = argparse.ArgumentParser()
ap.add_argument("out")
ap.add_argument("--frames", type=int, default=4000)
ap.add_argument("--side", type=int, default=32, help="frame height and width")
ap.add_argument("--chunk-frames", type=int, default=0, help="frames per chunk (0: zarr's default chunks)")
args = ap.parse_args()

side = args.side
chunks = (args.chunk_frames, side, side, 3) if args.chunk_frames else True
t = np.arange(args.frames, dtype=np.float32)[:, None, None]
yy, xx = np.mgrid[0:side, 0:side].astype(np.float32)
root = zarr.open_group(args.out, mode="w")
for cam in range(4):
    frames = np.stack([(np.sin(xx / 5 + t / 40 + c + cam) * 100 + 120) for c in range(3)], axis=-1)
    root.array("data/camera%d" % cam, frames.astype(np.uint8), chunks=chunks)  # True: zarr's default chunks
state = np.sin(np.arange(args.frames * 14, dtype=np.float32).reshape(args.frames, 14) / 50)
root.array("data/state", state)
root.array("data/action", np.roll(state, -1, axis=0))
episodes = max(1, args.frames // 1000)
root.array("meta/episode_ends", np.linspace(args.frames / episodes, args.frames, episodes).astype(np.int64))
print(root["data/camera0"].chunks)
