#!/usr/bin/env python3
"""A plain training loop over a DataLoader whose workers are slower than
the loop: every batch takes --batch-ms in the Dataset (read_from_storage
sleeps, as a slow disk serving in rounds would: until the next multiple of
--batch-ms on the wall clock, so every worker's batch is ready at the same
moment), the loop --step-ms. With N workers the N batches of a round
arrive together, so the loop waits on every Nth step: a steadily slow
loader. With --stall-every K only every Kth batch is slow
(--stall-ms): a periodic stall, which deeper prefetch would hide when the
worker that gets the slow batch still keeps up over the K steps (K = 20,
--stall-ms 400, --step-ms 40: 409 ms of its work against 800 ms of steps),
and which no prefetch hides when it does not (the defaults: 609 ms against
100 ms).
Run it under `pipetop run -- python3 examples/auto/in_turn.py --workers 2`."""

import argparse
import time

import torch
from torch.utils.data import DataLoader, Dataset

ap = argparse.ArgumentParser()
ap.add_argument("--workers", type=int, default=2)
ap.add_argument("--batch", type=int, default=4)
ap.add_argument("--batch-ms", type=float, default=200)
ap.add_argument("--step-ms", type=float, default=5)
ap.add_argument("--stall-every", type=int, default=0)
ap.add_argument("--stall-ms", type=float, default=600)
ap.add_argument("--seconds", type=float, default=60)
args = ap.parse_args()


def read_from_storage(seconds: float, rounds: bool) -> None:
    """Stands for a slow read: seconds long, or (rounds) until the next
    multiple of seconds on the wall clock."""
    time.sleep(seconds - time.time() % seconds if rounds else seconds)


class Slow(Dataset):
    def __len__(self) -> int:
        return 1_000_000

    def __getitem__(self, i: int) -> torch.Tensor:
        batch, first = divmod(i, args.batch)
        if args.stall_every:
            ms = args.stall_ms if batch % args.stall_every == args.stall_every - 1 else 1
            read_from_storage(ms / 1e3 / args.batch, False)
        elif first == 0:
            read_from_storage(args.batch_ms / 1e3, True)
        return torch.full((8,), float(i % 10))


torch.set_num_threads(1)
loader = DataLoader(Slow(), batch_size=args.batch, num_workers=args.workers)
model = torch.nn.Linear(8, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
start = time.monotonic()
for x in loader:
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    time.sleep(args.step_ms / 1e3)
    opt.step()
    if time.monotonic() - start >= args.seconds:
        break
