"""The loop bench/bisect_replay.sh times: a tiny MLP trained on batches
from a DataLoader, steps of a few milliseconds, one intra-op thread.

    python3 bisect_replay.py [--self-replay] [--seconds S] [--cache K]

Default: the plain loop over its DataLoader, epoch after epoch (run it with
PIPETOP_BISECT_PHASE=cached to time pipetop's replay). --self-replay: the
script replays its own first K batches itself, cyclically, in epochs of the
loader's length (taken with gradients off, so that the instrumentation
does not take the loader for the training one). Prints one JSON line:
{"mode": ..., "steps_per_sec": X, "steps_per_cpu_sec": Y, "steps": N},
measured after a warm-up, then "next_ns": the mean time of one next() on
its epochs' iterators alone (no step work). Y counts the training thread's own CPU time
(time.thread_time), which a busy neighbour on the machine disturbs far less
than the wall clock.
"""

import argparse
import itertools
import json
import time

import torch
from torch.utils.data import DataLoader, TensorDataset

WARMUP_S = 1.0


def self_replay(loader, k):
    """Epochs of len(loader) batches cycling over the loader's first k."""
    with torch.no_grad():
        cached = list(itertools.islice(iter(loader), k))
    cycle = itertools.cycle(cached)
    while True:
        yield itertools.islice(cycle, len(loader))


def real(loader):
    """The loader's own epochs."""
    while True:
        yield loader


def next_ns(epochs, rounds=300):
    """Mean ns of one batch's next() from the epochs' iterators (the
    instrumented __next__ included where there is one), the step's work
    left out."""
    total = n = 0
    for _, epoch in zip(range(rounds), epochs):
        it = iter(epoch)
        t0 = time.perf_counter_ns()
        for _ in it:
            n += 1
        total += time.perf_counter_ns() - t0
    return total / max(1, n)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--self-replay", action="store_true")
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument("--cache", type=int, default=16)
    a = p.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    loader = DataLoader(TensorDataset(torch.randn(4096, 128), torch.randn(4096, 1)), batch_size=64, shuffle=True)
    model = torch.nn.Sequential(torch.nn.Linear(128, 512), torch.nn.ReLU(), torch.nn.Linear(512, 512), torch.nn.ReLU(), torch.nn.Linear(512, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    epochs = self_replay(loader, a.cache) if a.self_replay else real(loader)
    steps, t0, c0, measuring = 0, time.perf_counter() + WARMUP_S, 0.0, False
    for epoch in epochs:
        for x, y in epoch:
            loss = torch.nn.functional.mse_loss(model(x.to("cpu")), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            steps += 1
            now = time.perf_counter()
            if not measuring and now >= t0:
                measuring, steps, t0, c0 = True, 0, now, time.thread_time()
            elif measuring and now - t0 >= a.seconds:
                cpu = time.thread_time() - c0
                mode = "self-replay" if a.self_replay else "loader"
                print(json.dumps({"mode": mode, "steps_per_sec": round(steps / (now - t0), 1),
                                  "steps_per_cpu_sec": round(steps / cpu, 1), "steps": steps,
                                  "next_ns": round(next_ns(epochs))}), flush=True)
                return


if __name__ == "__main__":
    main()
