"""Trains 5 steps, then crashes with an exception (exit status 1)."""
import torch

model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for i in range(8):
    if i == 5:
        raise RuntimeError("planted crash at step 5")
    loss = model(torch.randn(2, 4)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
