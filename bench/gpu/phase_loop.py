"""The launch-heavy loop of launch_heavy.py, run for argv[1] seconds, printing
"t <CLOCK_MONOTONIC ns> it <iterations so far>" every 0.1 s, so that
throughput can be read per phase of an agent that switches the library's
configuration (bench/gpu/cuda_phase_check.sh)."""
import sys
import time

import torch

from launch_heavy import step  # the same ~20 tiny kernels per iteration


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 60.0
    x = torch.randn(1024, device="cuda")
    end = time.monotonic() + seconds
    n = 0
    next_report = time.monotonic()
    while time.monotonic() < end:
        x = step(x)
        n += 1
        now = time.monotonic()
        if now >= next_report:
            print(f"t {time.monotonic_ns()} it {n}", flush=True)
            next_report = now + 0.1
    torch.cuda.synchronize()


if __name__ == "__main__":
    main()
