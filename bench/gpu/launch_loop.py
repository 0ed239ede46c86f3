"""A PyTorch loop that launches many small CUDA kernels, for argv[1] seconds.
Used by bench/gpu/unwind_on_gpu_host.sh to probe cuLaunchKernel's callers."""
import sys
import time

import torch


def step(x):
    for _ in range(10):
        x = x * 1.0001 + 0.0001
    return x


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 30.0
    x = torch.randn(1024, device="cuda")
    end = time.time() + seconds
    n = 0
    while time.time() < end:
        x = step(x)
        n += 1
    torch.cuda.synchronize()
    print("iterations", n, flush=True)


if __name__ == "__main__":
    main()
