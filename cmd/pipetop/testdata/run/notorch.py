"""Runs on a Python without torch: the import fails the normal way and the
script goes on."""
import sys

try:
    import torch
    print("torch present", torch.__version__)
except ImportError as e:
    print("no torch:", e.name)
print("sum", sum(range(10)))
sys.exit(4)
