#!/usr/bin/env python3
"""A plain PyTorch DDP training loop (Gloo, CPU) whose ranks
torch.multiprocessing.spawn starts, as pytorch/examples' recipe does (no
launcher, no RANK or WORLD_SIZE in the environment: each rank gets its
index from spawn and calls init_process_group with it):

    pipetop run -- python3 examples/ddp/spawn.py --nprocs 2

Each rank reads its batches through a DataLoader with --workers workers
(each batch sleeps --read-ms in the Dataset) and sleeps --step-ms in its
forward, so that the steps are long against a loaded machine's scheduling
noise; it stops after --seconds.
"""

import argparse
import os
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


class Items(Dataset):
    def __init__(self, read_ms: float) -> None:
        self.read = read_ms / 1e3

    def __len__(self) -> int:
        return 10**5

    def __getitem__(self, i: int) -> torch.Tensor:
        time.sleep(self.read / 8)
        return torch.full((16,), float(i % 7))


class Net(torch.nn.Module):
    def __init__(self, step_ms: float) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(16, 1)
        self.wait = step_ms / 1e3

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        time.sleep(self.wait)
        return self.fc(x)


def main_worker(rank: int, world_size: int, args: argparse.Namespace) -> None:
    dist.init_process_group("gloo", rank=rank, world_size=world_size)
    torch.set_num_threads(1)
    data = Items(args.read_ms)
    loader = DataLoader(data, batch_size=8, sampler=DistributedSampler(data, world_size, rank), num_workers=args.workers)
    model = DistributedDataParallel(Net(args.step_ms))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    start = time.monotonic()
    for x in loader:
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        # The ranks stop together: one that stopped on its own clock a step
        # before the others would leave them in an all-reduce with a closed
        # peer.
        stop = torch.tensor([float(time.monotonic() - start >= args.seconds)])
        dist.all_reduce(stop, op=dist.ReduceOp.MAX)
        if stop.item():
            break
    dist.destroy_process_group()


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--nprocs", type=int, default=2)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--read-ms", type=float, default=20)
    ap.add_argument("--step-ms", type=float, default=40)
    ap.add_argument("--seconds", type=float, default=10)
    args = ap.parse_args()
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29512")
    mp.spawn(main_worker, args=(args.nprocs, args), nprocs=args.nprocs, join=True)
