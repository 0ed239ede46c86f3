"""A PyTorch loop that reads its loss with .item() every step, for the GPU
wait check (bench/gpu/gpu_wait_check.sh):

  forward     four (x @ w).relu() layers       (GEMM and elementwise kernels)
  read_loss   y.sum().item()                   (a reduction, then the host waits)
  checkpoint  torch.cuda.synchronize(), every 10th step

  item_loop.py SECONDS OUT_JSON
Writes OUT_JSON: the measured steps' Unix start/end (ms), the steps, and the
host time spent in each waiting call site as Python measured it around the
call (ns): the reference for the gpu_wait profile's call sites."""
import json
import sys
import time

import torch

N = 4096


def forward(x, w):
    for _ in range(4):
        x = (x @ w).relu()
    return x


def read_loss(y):
    return y.sum().item()


def checkpoint():
    torch.cuda.synchronize()


def main():
    seconds, out_path = float(sys.argv[1]), sys.argv[2]
    torch.manual_seed(0)
    x = torch.randn(N, N, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(N, N, device="cuda", dtype=torch.bfloat16) / N**0.5
    for _ in range(20):  # warm-up: cuBLAS heuristics, the caching allocator
        read_loss(forward(x, w))
    torch.cuda.synchronize()
    time.sleep(2)  # the agent has described the process and attached its probe
    spent = {"read_loss": 0, "checkpoint": 0}
    steps = 0
    start = time.time()
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        y = forward(x, w)
        t0 = time.perf_counter_ns()
        read_loss(y)
        spent["read_loss"] += time.perf_counter_ns() - t0
        steps += 1
        if steps % 10 == 0:
            t0 = time.perf_counter_ns()
            checkpoint()
            spent["checkpoint"] += time.perf_counter_ns() - t0
    end = time.time()
    with open(out_path, "w") as f:
        json.dump({"start_ms": int(start * 1000), "end_ms": int(end * 1000), "steps": steps, "spent_ns": spent}, f)
    print(f"{steps} steps in {end - start:.1f} s; read_loss {spent['read_loss'] / 1e9:.3f} s, "
          f"checkpoint {spent['checkpoint'] / 1e9:.3f} s")


if __name__ == "__main__":
    main()
