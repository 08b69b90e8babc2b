"""A planted script that fails (plain PyTorch; never imports pipetop).

    python3 fails.py --how import|sleep|step4

  import  exits at import, before any training: a module that is not there
  sleep   imports torch, then sleeps for a minute and never trains
  step4   trains a tiny network on a DataLoader and raises at its 4th step
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time


def train_until_step4() -> None:
    """Three steps, then a RuntimeError in the 4th."""
    import torch
    from torch import nn
    from torch.utils.data import DataLoader, TensorDataset

    data = TensorDataset(torch.randn(512, 16), torch.randn(512, 1))
    loader = DataLoader(data, batch_size=16, shuffle=True)
    model = nn.Linear(16, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for step, (x, y) in enumerate(loader, 1):
        if step == 4:
            raise RuntimeError("planted failure at step 4")
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--how", required=True, choices=("import", "sleep", "step4"))
    a = p.parse_args()
    if a.how == "import":
        importlib.import_module("pipetop_planted_module_that_is_not_there")
    if a.how == "sleep":
        import torch

        torch.set_num_threads(1)
        time.sleep(60)
        return
    train_until_step4()


if __name__ == "__main__":
    sys.exit(main())
