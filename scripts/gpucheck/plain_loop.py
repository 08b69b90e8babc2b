#!/usr/bin/env python3
"""A plain PyTorch training loop with no pipetop code in it.

scripts/gpu-check.sh runs it under ``pipetop run`` (automatic
instrumentation) and, with ``--lightning``, as a Lightning fit with
pipetop's callback. A small convolutional classifier on procedural images,
a DataLoader with worker processes, AdamW, bf16 autocast on CUDA; it trains
for ``--seconds`` and prints the last loss. With ``--ddp`` the model is
wrapped in DistributedDataParallel over the process group the launcher's
variables describe (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT; NCCL on
CUDA, Gloo on the CPU), and the loss is all-reduced after each step.

    python3 plain_loop.py --device cuda --seconds 10
    RANK=0 WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 python3 plain_loop.py --ddp
"""

from __future__ import annotations

import argparse
import time
from typing import Any, List, Optional, Tuple

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class Shapes(Dataset):
    """Images with a bright square in one of two halves; the label is the half."""

    def __init__(self, size: int, length: int = 1 << 16) -> None:
        self.size = size
        self.length = length

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, i: int) -> Tuple[torch.Tensor, int]:
        g = torch.Generator().manual_seed(i)
        x = 0.1 * torch.rand(3, self.size, self.size, generator=g)
        label = i % 2
        half = self.size // 2
        s = self.size // 4
        x0 = label * half + int(torch.randint(0, half - s, (1,), generator=g))
        y0 = int(torch.randint(0, self.size - s, (1,), generator=g))
        x[:, y0:y0 + s, x0:x0 + s] += 0.9
        return x, label


def make_model(width: int) -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(3, width, 3, padding=1), nn.ReLU(),
        nn.Conv2d(width, width, 3, stride=2, padding=1), nn.ReLU(),
        nn.Conv2d(width, width, 3, stride=2, padding=1), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(width, 2))


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cpu", help="torch device: cpu or cuda")
    p.add_argument("--seconds", type=float, default=10, help="training time")
    p.add_argument("--batch", type=int, default=64, help="samples per step")
    p.add_argument("--size", type=int, default=64, help="image side in pixels")
    p.add_argument("--width", type=int, default=64, help="convolution channels")
    p.add_argument("--workers", type=int, default=2, help="DataLoader worker processes")
    p.add_argument("--lightning", action="store_true", help="train with Lightning and pipetop's callback")
    p.add_argument("--ddp", action="store_true", help="DistributedDataParallel over the launcher's process group")
    p.add_argument("--name", default="plain-loop", help="pipetop name (with --lightning)")
    return p.parse_args(argv)


def loader(args: argparse.Namespace) -> DataLoader:
    return DataLoader(Shapes(args.size), batch_size=args.batch, shuffle=True, num_workers=args.workers,
                      pin_memory=args.device.startswith("cuda"), drop_last=True,
                      persistent_workers=args.workers > 0)


def train_plain(args: argparse.Namespace) -> float:
    dev = torch.device(args.device)
    cuda = dev.type == "cuda"
    model = make_model(args.width).to(dev)
    dist = None
    if args.ddp:
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel

        dist.init_process_group("nccl" if cuda else "gloo")
        model = DistributedDataParallel(model, device_ids=[dev.index or 0] if cuda else None)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    deadline = time.monotonic() + args.seconds
    loss_value, step = float("nan"), 0
    data = loader(args)
    while time.monotonic() < deadline:
        for x, y in data:
            x, y = x.to(dev, non_blocking=True), y.to(dev, non_blocking=True)
            with torch.autocast(device_type=dev.type, dtype=torch.bfloat16, enabled=cuda):
                loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            if dist is not None:
                dist.all_reduce(loss.detach())  # an outermost collective: comm of its own
            step += 1
            if step % 20 == 0:
                loss_value = loss.item()
            if time.monotonic() >= deadline:
                break
    last = loss.item() if step else loss_value
    if dist is not None:
        dist.destroy_process_group()
    return last


def train_lightning(args: argparse.Namespace) -> float:
    try:
        import lightning.pytorch as pl
    except ImportError:
        import pytorch_lightning as pl  # type: ignore[no-redef]
    from pipetop_publish.integrations import lightning_callback

    class Net(pl.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.net = make_model(args.width)
            self.last = float("nan")

        def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
            x, y = batch
            loss = nn.functional.cross_entropy(self.net(x), y)
            if batch_idx % 20 == 0:
                self.last = loss.item()
            return loss

        def configure_optimizers(self) -> Any:
            return torch.optim.AdamW(self.parameters(), lr=1e-3)

    cuda = args.device.startswith("cuda")
    net = Net()
    trainer = pl.Trainer(accelerator="gpu" if cuda else "cpu", devices=1,
                         precision="bf16-mixed" if cuda else "32-true",
                         max_time={"seconds": args.seconds}, max_epochs=-1, logger=False,
                         enable_checkpointing=False, enable_progress_bar=False,
                         enable_model_summary=False, callbacks=[lightning_callback(name=args.name)])
    trainer.fit(net, loader(args))
    return net.last


def main() -> None:
    args = parse_args()
    torch.manual_seed(0)
    loss = train_lightning(args) if args.lightning else train_plain(args)
    print("final loss %.4f" % loss, flush=True)


if __name__ == "__main__":
    main()
