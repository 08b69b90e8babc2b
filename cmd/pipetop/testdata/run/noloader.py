"""No DataLoader anywhere: 7 steps over tensors, then an inference pass with no optimizer."""
import torch

model = torch.nn.Linear(4, 1)
opt = torch.optim.Adam(model.parameters())
for x in torch.randn(7, 3, 4):
    loss = model(x).pow(2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
with torch.no_grad():
    print("inference", round(model(torch.ones(1, 4)).item(), 3) is not None)
