"""A launch-heavy PyTorch loop (about 20 tiny elementwise kernels per
iteration), or with argv[2] == "matmul" a matmul-heavy one (4096x4096 bf16
GEMMs), or with argv[2] == "stream" a memory-bound one (the same elementwise
steps on 2^28 floats): prints iterations/s over argv[1] seconds after a 1 s
warm-up. argv[2] may join loops with "+" ("launch+matmul"): each runs in
turn, with its own warm-up, and prints "it_per_s N LOOP".
Used by bench/gpu/cuda_injection_check.sh to compare configurations.
WS_TORCH_PROFILER=1 measures it under torch.profiler (CPU + CUDA activities)."""
import contextlib
import os
import sys
import time

import torch


def step(x):
    for _ in range(10):
        x = x * 1.0001 + 0.0001
    return x


def matmul_step(x, w):
    for _ in range(4):
        x = x @ w
    return x


def run_for(x, seconds, w=None):
    end = time.perf_counter() + seconds
    n = 0
    while time.perf_counter() < end:
        x = step(x) if w is None else matmul_step(x, w)
        n += 1
    torch.cuda.synchronize()
    return x, n


def setup(loop):
    if loop == "matmul":
        x = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16) / 64
        return x, torch.eye(4096, device="cuda", dtype=torch.bfloat16)
    if loop == "stream":
        return torch.randn(1 << 28, device="cuda"), None
    return torch.randn(1024, device="cuda"), None


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 6.0
    loops = sys.argv[2].split("+") if len(sys.argv) > 2 else ["launch"]
    for loop in loops:
        x, w = setup(loop)
        x, _ = run_for(x, 1.0, w)
        profiler = contextlib.nullcontext()
        if os.environ.get("WS_TORCH_PROFILER") == "1":
            from torch.profiler import ProfilerActivity, profile
            profiler = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
        with profiler:
            t0 = time.perf_counter()
            x, n = run_for(x, seconds, w)
            elapsed = time.perf_counter() - t0
        print(f"it_per_s {n / elapsed:.1f}" + (f" {loop}" if len(loops) > 1 else ""), flush=True)


if __name__ == "__main__":
    main()
