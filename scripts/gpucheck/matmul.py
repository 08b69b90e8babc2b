#!/usr/bin/env python3
"""Keep the GPU busy with bf16 matrix products for a while.

    matmul.py SECONDS [URL]

With URL, fetch it before the products stop and print the body: a scrape of
``pipetop export`` taken while the GPU is still hot.
"""

from __future__ import annotations

import sys
import time
import urllib.request

import torch


def main() -> None:
    seconds = float(sys.argv[1])
    url = sys.argv[2] if len(sys.argv) > 2 else ""
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    start = time.monotonic()
    body = ""
    while time.monotonic() - start < seconds:
        for _ in range(10):
            a @ a
        torch.cuda.synchronize()
        if url and not body and time.monotonic() - start > seconds - 1.5:
            body = urllib.request.urlopen(url, timeout=10).read().decode()
    print(body, end="")


if __name__ == "__main__":
    main()
