"""A "training loop" that is CPU-bound in Python: it spends its time in
tokenize_batch (pure Python), as a data pipeline on the GPU-feeding thread
would, for the insights test (tests/integration/gpu_metrics_bpf_test.cc).

  cpu_bound_feeder.py SECONDS
"""
import sys
import time


def tokenize_batch(n):
    total = 0
    for i in range(n):
        total += (i * 31) % 7
    return total


def main():
    until = time.monotonic() + float(sys.argv[1])
    while time.monotonic() < until:
        tokenize_batch(20000)


if __name__ == "__main__":
    main()
