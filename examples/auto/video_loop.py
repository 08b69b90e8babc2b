#!/usr/bin/env python3
"""A plain training loop over a Dataset that reads one frame of an MP4 per
sample with PyAV, the way many robot-learning loaders read their camera
files: open the file, seek to the frame (PyAV lands on the keyframe at or
before it), decode up to the frame, convert it to RGB. Shuffled, 2
DataLoader workers, whole epochs (each frame read once per epoch). With a
keyframe every 250 frames a read decodes ~100 frames to return one; with a
keyframe on every frame it decodes one. With --reader torchvision a read is
torchvision.io.read_video of the one frame's pts (which opens, seeks and
decodes through PyAV, and decodes a few frames past the clip's end).
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
ap.add_argument("--reader", choices=("pyav", "torchvision"), default="pyav")
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
        rgb = self.torchvision(i) if args.reader == "torchvision" else self.pyav(i)
        step = max(1, rgb.shape[0] // 8)
        return torch.from_numpy(np.ascontiguousarray(rgb[::step, ::step][:8, :8]).astype(np.float32) / 255)

    def torchvision(self, i: int) -> np.ndarray:
        from torchvision.io import read_video

        pts = round(i * self.ticks)
        frames, _, _ = read_video(self.path, start_pts=pts, end_pts=pts, pts_unit="pts")
        return frames[0].numpy()

    def pyav(self, i: int) -> np.ndarray:
        with av.open(self.path) as c:
            s = c.streams.video[0]
            pts = round(i * self.ticks)
            c.seek(pts, stream=s)
            for frame in c.decode(s):
                if frame.pts >= pts:
                    return frame.to_ndarray(format="rgb24")
        raise IndexError("frame %d is past the end of %s" % (i, self.path))


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
