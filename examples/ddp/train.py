#!/usr/bin/env python3
"""A plain PyTorch DDP training loop (Gloo, CPU) with one rank made slower
on purpose, for pipetop's straggler tests and for trying it by hand.

Start one process per rank with the launcher's variables set (torchrun, a
shell script, or srun set them):

    RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=29511 pipetop run -- python3 train.py --slow-stage forward &
    RANK=1 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=29511 pipetop run -- python3 train.py --slow-stage forward

--slow-stage plants --slow-ms of extra work per step on --slow-rank: in
data_wait (a slower dataset), forward (a slower layer) or backward (a layer
whose gradient is slower to compute); none plants nothing. Every rank also
sleeps --base-ms in each of data loading and forward, so that the steps
are long against a loaded machine's scheduling noise.

The script measures itself and prints one JSON line at the end: its
optimizer steps, its wall and CPU time (the process's, all threads), and its own estimate of the time it
spent in DDP's gradient all-reduce: the backward wall time less the same
backward timed under no_sync() (no communication) before training.
"""

import argparse
import json
import os
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, Dataset

ap = argparse.ArgumentParser()
ap.add_argument("--steps", type=int, default=40)
ap.add_argument("--slow-rank", type=int, default=1)
ap.add_argument("--slow-stage", choices=("none", "data_wait", "forward", "backward"), default="none")
ap.add_argument("--slow-ms", type=float, default=30.0)
ap.add_argument("--base-ms", type=float, default=10.0)
ap.add_argument("--batch", type=int, default=8)
args = ap.parse_args()

torch.set_num_threads(1)
if "RANK" not in os.environ and "SLURM_PROCID" in os.environ:  # started by srun
    dist.init_process_group("gloo", rank=int(os.environ["SLURM_PROCID"]), world_size=int(os.environ["SLURM_NTASKS"]))
else:
    dist.init_process_group("gloo")
rank = dist.get_rank()
slow = rank == args.slow_rank
extra = args.slow_ms / 1000.0


def planted(stage: str) -> float:
    """Seconds of extra work this rank does in stage."""
    return extra if slow and args.slow_stage == stage else 0.0


class Items(Dataset):
    def __len__(self) -> int:
        return 10**6

    def __getitem__(self, i: int):
        return torch.randn(32), torch.randn(4)


def collate(items):
    time.sleep(args.base_ms / 1000.0 + planted("data_wait"))
    xs, ys = zip(*items)
    return torch.stack(xs), torch.stack(ys)


class SlowGrad(torch.autograd.Function):
    """Identity forward; its backward takes `delay` seconds longer."""

    @staticmethod
    def forward(ctx, x, delay):
        ctx.delay = delay
        return x.view_as(x)

    @staticmethod
    def backward(ctx, g):
        if ctx.delay:
            time.sleep(ctx.delay)
        return g, None


class Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inp = torch.nn.Linear(32, 64)
        self.out = torch.nn.Linear(64, 4)

    def forward(self, x):
        time.sleep(args.base_ms / 1000.0 + planted("forward"))
        h = SlowGrad.apply(self.inp(x), planted("backward"))
        return self.out(torch.relu(h))


model = DistributedDataParallel(Net())
opt = torch.optim.SGD(model.parameters(), lr=0.01)
loss_fn = torch.nn.MSELoss()
loader = DataLoader(Items(), batch_size=args.batch, collate_fn=collate)

# This rank's own backward, without communication.
x, y = torch.randn(args.batch, 32), torch.randn(args.batch, 4)
own = []
with model.no_sync():
    for _ in range(3):
        loss = loss_fn(model(x), y)
        t = time.perf_counter()
        loss.backward()
        own.append(time.perf_counter() - t)
opt.zero_grad()
own_backward = sorted(own)[1]

steps, backward, t0, c0 = 0, 0.0, time.perf_counter(), time.process_time()
for x, y in loader:
    loss = loss_fn(model(x), y)
    opt.zero_grad()
    t = time.perf_counter()
    loss.backward()
    backward += time.perf_counter() - t
    opt.step()
    steps += 1
    if steps == args.steps:
        break
wall = time.perf_counter() - t0
cpu = time.process_time() - c0
comm = max(0.0, backward - steps * own_backward)
line = json.dumps({"rank": rank, "steps": steps, "wall_s": wall, "cpu_s": cpu, "comm_s": comm, "comm_share": comm / wall,
                   "own_backward_ms": own_backward * 1e3, "pid": os.getpid()})
os.write(1, (line + "\n").encode())  # one write: the ranks share the launcher's output

dist.destroy_process_group()
