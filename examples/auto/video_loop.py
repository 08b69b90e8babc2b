#!/usr/bin/env python3
"""A plain training loop over a Dataset that reads one frame of an MP4 per
sample with PyAV, the way many robot-learning loaders read their camera
files: open the file, seek to the frame (PyAV lands on the keyframe at or
before it), decode up to the frame, convert it to RGB. Shuffled, 2
DataLoader workers, whole epochs (each frame read once per epoch). With a
keyframe every 250 frames a read decodes ~100 frames to return one; with a
keyframe on every frame it decodes one.
Run it under `pipetop run -- python3 examples/auto/video_loop.py CAM.mp4`."""

import argparse

import av
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

ap = argparse.ArgumentParser()
ap.add_argument("video")
ap.add_argument("--epochs", type=int, default=2)
ap.add_argument("--workers", type=int, default=2)
args = ap.parse_args()


class Frames(Dataset):
    """Frame i of the video, as float32 in [0, 1], subsampled to 8x8."""

    def __init__(self, path: str) -> None:
        self.path = path
        with av.open(path) as c:
            s = c.streams.video[0]
            self.n = s.frames
            self.ticks = 1 / (s.average_rate * s.time_base)  # pts per frame

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> torch.Tensor:
        with av.open(self.path) as c:
            s = c.streams.video[0]
            pts = round(i * self.ticks)
            c.seek(pts, stream=s)
            for frame in c.decode(s):
                if frame.pts >= pts:
                    rgb = frame.to_ndarray(format="rgb24")
                    break
        step = max(1, rgb.shape[0] // 8)
        return torch.from_numpy(np.ascontiguousarray(rgb[::step, ::step][:8, :8]).astype(np.float32) / 255)


torch.set_num_threads(1)  # a small model: leave the cores to the loader
loader = DataLoader(Frames(args.video), batch_size=16, shuffle=True, num_workers=args.workers)
model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(8 * 8 * 3, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for epoch in range(args.epochs):
    for x in loader:
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
