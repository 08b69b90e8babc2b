"""The usual Python input pipeline, as the peer for `pipetrain bench loader`.

zarr-python reads the replay buffer and a torch DataLoader (shuffle=True,
N worker processes, batch B) assembles the same training windows pipetrain
uses: diffusion_policy's SequenceSampler semantics (pad_before =
n_obs_steps-1, pad_after = n_action_steps-1, edge frames repeated), the
first n_obs_steps frames of each camera and the state, and horizon actions.

usage: /usr/bin/python3 bench/loader_peer.py --data DIR [--workers 2]
       [--batch 64] [--seconds 10] [--json]

Throughput is counted from the first batch to the last one, over at least
--seconds and at least --min-batches batches after the first.
"""
import argparse
import json
import time

import numpy as np
import torch
import zarr


def create_indices(episode_ends, horizon, pad_before, pad_after):
    """Windows as (buffer_start, buffer_end, sample_start, sample_end)."""
    out = []
    start = 0
    for end in episode_ends:
        n = end - start
        for idx in range(-pad_before, n - horizon + pad_after + 1):
            b0 = max(idx, 0) + start
            b1 = min(idx + horizon, n) + start
            s0 = b0 - (idx + start)
            s1 = horizon - ((idx + horizon + start) - b1)
            out.append((b0, b1, s0, s1))
        start = end
    return np.array(out, dtype=np.int64)


def padded(arr, b0, b1, s0, s1, length, first_k=None):
    """Read arr[b0:b1] into a sequence of `length`, repeating edge frames."""
    k = (b1 - b0) if first_k is None else min(first_k - s0, b1 - b0) if first_k > s0 else 0
    data = arr[b0:b0 + max(k, 1)]
    out = np.empty((length,) + data.shape[1:], dtype=data.dtype)
    out[:s0] = data[0]
    out[s0:s0 + len(data)] = data
    out[s0 + len(data):] = data[-1]
    return out


class Windows(torch.utils.data.Dataset):
    def __init__(self, path, cams, n_obs, horizon, n_action):
        self.path, self.cams = path, cams
        self.n_obs, self.horizon = n_obs, horizon
        root = zarr.open_consolidated(path, mode="r")
        ends = root["meta/episode_ends"][:]
        self.indices = create_indices(ends, horizon, n_obs - 1, n_action - 1)
        self.root = None

    def __len__(self):
        return len(self.indices)

    def __getitem__(self, i):
        if self.root is None:  # open per worker process
            self.root = zarr.open_consolidated(self.path, mode="r")
        b0, b1, s0, s1 = (int(v) for v in self.indices[i])
        data = self.root["data"]
        imgs = np.stack([padded(data[c], b0, b1, s0, s1, self.horizon, self.n_obs)[:self.n_obs]
                         for c in self.cams], axis=1)
        state = padded(data["state"], b0, b1, s0, s1, self.horizon, self.n_obs)[:self.n_obs]
        action = padded(data["action"], b0, b1, s0, s1, self.horizon)
        return torch.from_numpy(imgs), torch.from_numpy(state), torch.from_numpy(action)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", required=True)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--seconds", type=float, default=10)
    p.add_argument("--min-batches", type=int, default=2)
    p.add_argument("--cameras", default="camera0,camera1,camera2,camera3")
    p.add_argument("--n-obs", type=int, default=2)
    p.add_argument("--horizon", type=int, default=16)
    p.add_argument("--n-action", type=int, default=8)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--json", action="store_true")
    a = p.parse_args()
    torch.set_num_threads(1)
    ds = Windows(a.data, a.cameras.split(","), a.n_obs, a.horizon, a.n_action)
    g = torch.Generator()
    g.manual_seed(a.seed)
    dl = torch.utils.data.DataLoader(ds, batch_size=a.batch, shuffle=True, num_workers=a.workers,
                                     generator=g, persistent_workers=a.workers > 0, drop_last=True)
    t0 = time.monotonic()
    n, batches, first, last = 0, 0, None, None
    while True:
        for imgs, state, action in dl:
            now = time.monotonic()
            assert imgs.dtype == torch.uint8 and imgs.shape[1:] == (a.n_obs, len(ds.cams), 128, 128, 3), imgs.shape
            if first is None:
                first = now
            else:
                n += imgs.shape[0]
                batches += 1
                last = now
                if now - first >= a.seconds and batches >= a.min_batches:
                    break
        else:
            continue
        break
    el = last - first
    r = {"data": a.data, "sampler": "uniform", "workers": a.workers, "batch": a.batch, "seconds": el,
         "samples": n, "samples_per_sec": n / el, "startup_sec": first - t0}
    if a.json:
        print(json.dumps(r))
    else:
        print(f"peer {a.data}: zarr-python + DataLoader, {a.workers} workers, batch {a.batch}")
        print(f"  {r['samples_per_sec']:.1f} samples/s over {el:.1f}s (first batch after {r['startup_sec']:.1f}s)")


if __name__ == "__main__":
    main()
