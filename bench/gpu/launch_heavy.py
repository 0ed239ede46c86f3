"""A launch-heavy PyTorch loop (about 20 tiny elementwise kernels per
iteration): prints iterations/s over argv[1] seconds after a 1 s warm-up.
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


def run_for(x, seconds):
    end = time.perf_counter() + seconds
    n = 0
    while time.perf_counter() < end:
        x = step(x)
        n += 1
    torch.cuda.synchronize()
    return x, n


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 6.0
    x = torch.randn(1024, device="cuda")
    x, _ = run_for(x, 1.0)
    profiler = contextlib.nullcontext()
    if os.environ.get("WS_TORCH_PROFILER") == "1":
        from torch.profiler import ProfilerActivity, profile
        profiler = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
    with profiler:
        t0 = time.perf_counter()
        x, n = run_for(x, seconds)
        elapsed = time.perf_counter() - t0
    print(f"it_per_s {n / elapsed:.1f}", flush=True)


if __name__ == "__main__":
    main()
