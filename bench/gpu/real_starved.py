"""Workload h of bench/gpu/real_suite.sh: a loop whose GPU waits on a slow
CPU function, slow_cpu_preprocess (pure Python). First STEADY seconds of
starved steps (~40 ms of Python, then one short GEMM), then PERIODIC seconds
of GPU-bound steps (GEMMs) with a STALL-second stall in slow_cpu_preprocess
at the start of every PERIOD seconds.

  real_starved.py STEADY PERIODIC [STALL] [PERIOD]
"""
import sys
import time

import torch

import real_common


def slow_cpu_preprocess(n):
    total = 0
    for i in range(n):
        total += (i * 31) % 7
    return total


def gpu_step(x, k):
    for _ in range(k):
        y = x @ x
    return y


def main(result):
    steady, periodic = float(sys.argv[1]), float(sys.argv[2])
    stall = float(sys.argv[3]) if len(sys.argv) > 3 else 5.0
    period = float(sys.argv[4]) if len(sys.argv) > 4 else 20.0
    x = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16) / 64
    gpu_step(x, 2)
    torch.cuda.synchronize()
    result["steady_start_ms"] = int(time.time() * 1000)
    n_steady, until = 0, time.monotonic() + steady
    while time.monotonic() < until:
        slow_cpu_preprocess(600_000)
        gpu_step(x, 1)
        n_steady += 1
    torch.cuda.synchronize()
    result["periodic_start_ms"] = int(time.time() * 1000)
    n_busy, stalls, stalled_s = 0, [], 0.0
    t0 = time.monotonic()
    while (t := time.monotonic() - t0) < periodic:
        if t % period < stall:  # the stall: the GPU idles while Python prepares
            torch.cuda.synchronize()
            s = time.monotonic()
            stalls.append(int(time.time() * 1000))
            while time.monotonic() - s < stall:
                slow_cpu_preprocess(200_000)
            stalled_s += time.monotonic() - s
            continue
        gpu_step(x, 16)
        n_busy += 1
        if n_busy % 8 == 0:
            torch.cuda.synchronize()  # keep the queue short so a stall starts on time
    torch.cuda.synchronize()
    result.update(steady_steps=n_steady, busy_steps=n_busy, stalls_ms=stalls, stalled_s=round(stalled_s, 2))


if __name__ == "__main__":
    real_common.run(main)
