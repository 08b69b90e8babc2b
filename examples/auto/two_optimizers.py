#!/usr/bin/env python3
"""Two networks, two optimizers stepped in every iteration of the loader (as
in a GAN): one step per iteration. Planted per step: 2 x 8 ms forward, 2 x
8 ms optimizer: 50 % forward, 50 % optim (the loader's data costs nothing)."""

import argparse

from torch.utils.data import DataLoader

from plant import SleepyDataset, SleepyNet, SlowSGD

ap = argparse.ArgumentParser()
ap.add_argument("--steps", type=int, default=30)
args = ap.parse_args()

gen, critic = SleepyNet(forward_ms=8), SleepyNet(forward_ms=8)
opt_g = SlowSGD(gen.parameters(), step_ms=8)
opt_c = SlowSGD(critic.parameters(), step_ms=8)
for x, _ in DataLoader(SleepyDataset(args.steps * 4), batch_size=4):
    loss_c = critic(x).pow(2).mean()
    opt_c.zero_grad()
    loss_c.backward()
    opt_c.step()
    loss_g = (gen(x) - 1).pow(2).mean()
    opt_g.zero_grad()
    loss_g.backward()
    opt_g.step()
print("final losses %.4f %.4f" % (loss_c.item(), loss_g.item()))
