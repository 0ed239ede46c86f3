"""A PyTorch loop whose GPU waits for its CPU: each step prepares its batch
in Python (prepare_batch, ~40 ms of pure Python) and then runs a short
matmul, for the insights check on a GPU host (gpu_starved_by_cpu).

  starved_loop.py SECONDS
"""
import sys
import time

import torch


def prepare_batch(n):
    total = 0
    for i in range(n):
        total += (i * 31) % 7
    return total


def main():
    x = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    until = time.monotonic() + float(sys.argv[1])
    steps = 0
    while time.monotonic() < until:
        prepare_batch(600_000)
        y = x @ x
        steps += 1
    torch.cuda.synchronize()
    print(f"{steps} steps")


if __name__ == "__main__":
    main()
