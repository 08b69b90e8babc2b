"""Forks a child that uses torch and exits 7 through os._exit; the parent
trains 6 steps over a DataLoader with a worker, waits for the child and
checks its status."""
import os

import torch
from torch.utils.data import DataLoader, TensorDataset

model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
pid = os.fork()
if pid == 0:
    x = torch.ones(4)
    print("child sum", x.sum().item(), flush=True)
    model(x).sum().backward()
    opt.step()
    os._exit(7)
data = DataLoader(TensorDataset(torch.randn(12, 4)), batch_size=2, num_workers=1)
for (x,) in data:
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
_, status = os.waitpid(pid, 0)
print("child status", os.waitstatus_to_exitcode(status), flush=True)
