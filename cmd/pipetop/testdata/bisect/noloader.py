"""A training loop with no DataLoader: batches are made in the loop. Runs
until stopped (or --steps N). Plain PyTorch."""
import sys

import torch

steps = int(sys.argv[sys.argv.index("--steps") + 1]) if "--steps" in sys.argv else 0
torch.set_num_threads(1)
model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 1))
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
i = 0
while not steps or i < steps:
    x = torch.randn(32, 64)
    loss = model(x).pow(2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
    i += 1
