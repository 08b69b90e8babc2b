"""A training loop with no DataLoader: batches are made in the loop. Runs
until stopped (or --steps N). Plain PyTorch."""
import sys

import torch

steps = int(sys.argv[sys.argv.index("--steps") + 1]) if "--steps" in sys.argv else 0
torch.set_num_threads(1)
# Wide enough that the step's compute, not Python, sets its time: the
# backward and the optimizer step take about twice the forward, so the
# forward alone (pipetop bisect's forward phase) is clearly faster.
model = torch.nn.Sequential(torch.nn.Linear(64, 512), torch.nn.ReLU(), torch.nn.Linear(512, 512), torch.nn.ReLU(),
                            torch.nn.Linear(512, 1))
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
i = 0
while not steps or i < steps:
    x = torch.randn(32, 64)
    loss = model(x).pow(2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
    i += 1
