"""Trains for 3 s over a DataLoader, then asks on stdin whether to go on
(and waits for an answer). Plain PyTorch."""
import time

import torch
from torch.utils.data import DataLoader, TensorDataset

torch.set_num_threads(1)
data = TensorDataset(torch.randn(4096, 16), torch.randn(4096, 1))
model = torch.nn.Linear(16, 1)
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
start = time.monotonic()
while True:
    for x, y in DataLoader(data, batch_size=16):
        if time.monotonic() - start > 3:
            input("go on? ")
        loss = (model(x) - y).pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
