"""Writes and checks ResNet18 encoder weights for the encoder_weights test.

  resnet_weights.py make WIDTH OUT.pt REF.pt
      OUT.pt: a TorchScript module holding a torchvision-style ResNet18 of
      base width WIDTH under the attribute "backbone" (with an fc head the
      shim must ignore); REF.pt: its backbone state dict (torch.save).
  resnet_weights.py check SAVED.pt REF.pt
      SAVED.pt: the encoder written back by the shim (torch::save); exits
      non-zero unless every tensor of REF.pt is there and equal.
  resnet_weights.py same A.pt B.pt
      A.pt, B.pt: two encoders written by the shim; exits non-zero unless
      they hold the same tensors.
"""
import sys

import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(
                nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
        else:
            self.downsample = nn.Identity()

    def forward(self, x):
        h = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(self.bn2(self.conv2(h)) + self.downsample(x))


class ResNet18(nn.Module):
    def __init__(self, w):
        super().__init__()
        self.conv1 = nn.Conv2d(3, w, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(w)
        self.layer1 = nn.Sequential(Block(w, w, 1), Block(w, w, 1))
        self.layer2 = nn.Sequential(Block(w, 2 * w, 2), Block(2 * w, 2 * w, 1))
        self.layer3 = nn.Sequential(Block(2 * w, 4 * w, 2), Block(4 * w, 4 * w, 1))
        self.layer4 = nn.Sequential(Block(4 * w, 8 * w, 2), Block(8 * w, 8 * w, 1))
        self.fc = nn.Linear(8 * w, 10)

    def forward(self, x):
        h = torch.max_pool2d(torch.relu(self.bn1(self.conv1(x))), 3, 2, 1)
        h = self.layer4(self.layer3(self.layer2(self.layer1(h))))
        return self.fc(h.mean((2, 3)))


class Wrapper(nn.Module):
    def __init__(self, w):
        super().__init__()
        self.backbone = ResNet18(w)

    def forward(self, x):
        return self.backbone(x)


def make(width, out, ref):
    torch.manual_seed(1234)
    net = Wrapper(width)
    with torch.no_grad():  # non-trivial BatchNorm statistics
        for m in net.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 2.0)
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.1, 0.1)
    torch.jit.script(net).save(out)
    state = {k: v for k, v in net.backbone.state_dict().items() if not k.startswith("fc.")}
    torch.save(state, ref)


def tensors(path):
    m = torch.jit.load(path)
    got = dict(m.named_parameters())
    got.update(dict(m.named_buffers()))
    return got


def check(saved, ref):
    compare(tensors(saved), torch.load(ref))


def compare(got, want):
    bad = []
    for k, v in want.items():
        if k.endswith("num_batches_tracked"):
            continue
        if k not in got:
            bad.append(f"missing {k}")
        elif got[k].shape != v.shape or not torch.equal(got[k], v):
            bad.append(f"differs {k}")
    if bad:
        sys.exit("encoder round trip: " + "; ".join(bad[:5]))
    print(f"checked {len(want)} tensors")


if __name__ == "__main__":
    if sys.argv[1] == "make":
        make(int(sys.argv[2]), sys.argv[3], sys.argv[4])
    elif sys.argv[1] == "check":
        check(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "same":
        compare(tensors(sys.argv[2]), tensors(sys.argv[3]))
    else:
        sys.exit("usage: resnet_weights.py make WIDTH OUT REF | check SAVED REF | same A B")
