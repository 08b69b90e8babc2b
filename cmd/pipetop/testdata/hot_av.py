"""A training loop that imports PyAV (on CPython 3.11 the in-process stack
sampler turns itself off then; not with --no-av) and spends most of each
step in a pure-Python function, busy_python: the stack sampler names it.
Usage: hot_av.py SECONDS [--no-av]."""

import sys
import time

import torch

if "--no-av" not in sys.argv:
    import av  # imported for its effect on the in-process stack sampler

    AV_VERSION = av.__version__


def busy_python(ms):
    end = time.perf_counter() + ms / 1000
    n = 0
    while time.perf_counter() < end:
        n += 1
    return n


def main():
    model = torch.nn.Linear(8, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(16, 8)
    end = time.time() + float(sys.argv[1])
    while time.time() < end:
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        busy_python(4)


main()
