"""Print the windows bench/loader_peer.py builds, as frame lists.

usage: peer_windows.py HORIZON N_OBS N_ACTION END1 END2 ...

For each window prints the frame index at every horizon position (edge
padding applied), one JSON list per window, so the Go test can check that
the peer and pipetrain train on identical windows.
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "bench"))
import loader_peer  # noqa: E402

horizon, n_obs, n_action = (int(v) for v in sys.argv[1:4])
ends = [int(v) for v in sys.argv[4:]]
out = []
for b0, b1, s0, s1 in loader_peer.create_indices(ends, horizon, n_obs - 1, n_action - 1):
    frames = list(range(int(b0), int(b1)))
    seq = [frames[0]] * int(s0) + frames + [frames[-1]] * (horizon - int(s1))
    out.append(seq)
print(json.dumps(out))
