"""Trains 20 steps over a DataLoader, then asks on stdin whether to go on
(and waits for an answer). Plain PyTorch."""
import torch
from torch.utils.data import DataLoader, TensorDataset

torch.set_num_threads(1)
data = TensorDataset(torch.randn(4096, 16), torch.randn(4096, 1))
model = torch.nn.Linear(16, 1)
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
for i, (x, y) in enumerate(DataLoader(data, batch_size=16)):
    if i == 20:
        input("go on? ")
    loss = (model(x) - y).pow(2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
