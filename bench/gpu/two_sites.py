"""A PyTorch loop with two call sites of different power, interleaved in
every step, for the energy check (bench/gpu/energy_check.sh):

  dense_matmul   4096² bf16 GEMMs (tensor cores; near the power limit)
  stream_add     elementwise passes over 2^27 floats (memory-bound)

  two_sites.py SECONDS
runs for SECONDS seconds and prints its Unix start and end (ms)."""
import sys
import time

import torch


def dense_matmul(a, b):
    for _ in range(4):
        a = (a @ b) * 0.5
    return a


def stream_add(x):
    for _ in range(6):
        x = x * 1.0001 + 0.0001
    return x


def main():
    seconds = float(sys.argv[1])
    a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    x = torch.randn(1 << 27, device="cuda")
    torch.cuda.synchronize()
    start = time.time()
    while time.time() - start < seconds:
        a = dense_matmul(a, b).clamp(-1, 1)
        x = stream_add(x)
        torch.cuda.synchronize()
    print(f"start_ms {int(start * 1000)} end_ms {int(time.time() * 1000)}", flush=True)


if __name__ == "__main__":
    main()
