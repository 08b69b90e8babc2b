"""Check a dataset written by `pipetrain data gen` with zarr-python.

usage: check_dataset.py DIR EPISODES FRAMES SIZE

Opens the consolidated store, checks the layout and dtypes, and that the
action at frame t is the state at t+1 within each episode (held at the
last frame). Prints "ok" or the first problem and exits 1.
"""
import sys

import numpy as np
import zarr


def main(d, episodes, frames, size):
    root = zarr.open_consolidated(d, mode="r")
    T = episodes * frames
    ends = root["meta/episode_ends"][:]
    assert ends.dtype == np.int64 and list(ends) == [frames * (e + 1) for e in range(episodes)], ends
    for k in range(4):
        cam = root[f"data/camera{k}"]
        assert cam.dtype == np.uint8 and cam.shape == (T, size, size, 3), (cam.dtype, cam.shape)
        frame = cam[T // 2]
        assert frame.std() > 5, "camera frame looks blank"
    state, action = root["data/state"][:], root["data/action"][:]
    assert state.dtype == np.float32 and state.shape == (T, 14), state.shape
    assert np.abs(state).max() <= 1
    for e in range(episodes):
        s, a = state[e * frames:(e + 1) * frames], action[e * frames:(e + 1) * frames]
        assert np.array_equal(a[:-1], s[1:]), f"episode {e}: action[t] != state[t+1]"
        assert np.array_equal(a[-1], s[-1]), f"episode {e}: last action is not held"
    print("ok")


if __name__ == "__main__":
    try:
        main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))
    except AssertionError as e:
        print("check failed:", e)
        sys.exit(1)
