"""Workload i of bench/gpu/real_suite.sh: large bf16 matmuls keeping the GPU
about 85 % busy, with torch.cuda.synchronize() every step (and a short CPU
pause after it, ~18 % of the step's GPU time), for SECONDS.

  real_busy_sync.py SECONDS
"""
import sys
import time

import torch

import real_common


def matmul_block(a, b):
    for _ in range(8):
        a = (a @ b) * 0.5
    return a


def main(result):
    seconds = float(sys.argv[1])
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16) / 90
    b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16) / 90
    matmul_block(a, b)
    torch.cuda.synchronize()
    steps, gpu_ms, busy_s = 0, [], 0.0
    t0 = time.perf_counter()
    until = t0 + seconds
    while time.perf_counter() < until:
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        matmul_block(a, b)
        e.record()
        torch.cuda.synchronize()
        ms = s.elapsed_time(e)
        gpu_ms.append(ms)
        busy_s += ms / 1000
        steps += 1
        time.sleep(ms * 0.18 / 1000)
    elapsed = time.perf_counter() - t0
    result.update(steps=steps, step_ms_median=round(real_common.median(gpu_ms), 4),
                  gpu_busy_share=round(busy_s / elapsed, 4))


if __name__ == "__main__":
    real_common.run(main)
