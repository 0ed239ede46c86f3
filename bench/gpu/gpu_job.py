"""A PyTorch job whose GPU use changes in known phases, for comparing the
agent's NVML readings with nvidia-smi (bench/gpu/nvml_vs_smi.sh):

  busy    15 s  back-to-back 8192^2 bf16 matmuls (utilization ~100%)
  partial 15 s  3 matmuls (~5 ms), sleep 5 ms (utilization ~50%, steady at
                NVML's sampling periods, so two readers agree)
  idle    10 s  nothing on the GPU, 6 GiB more held (memory changes)

  python3 gpu_job.py SECONDS
Prints each phase's start as "phase NAME UNIX_MS" so the comparison can leave
out the seconds around a change, when two readers sampling at different
moments legitimately disagree."""
import sys
import time

import torch


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 80
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    torch.cuda.synchronize()
    end = time.time() + seconds
    extra = None
    while time.time() < end:
        for name, length in (("busy", 15), ("partial", 15), ("idle", 10)):
            print(f"phase {name} {int(time.time() * 1000)}", flush=True)
            stop = min(end, time.time() + length)
            if name == "idle":
                extra = torch.empty(6 << 30, dtype=torch.uint8, device="cuda")
                torch.cuda.synchronize()
                time.sleep(max(0.0, stop - time.time()))
                extra = None
                torch.cuda.empty_cache()
                continue
            while time.time() < stop:
                if name == "busy":
                    for _ in range(20):
                        a @ b
                    torch.cuda.synchronize()
                else:
                    for _ in range(3):
                        a @ b
                    torch.cuda.synchronize()
                    time.sleep(0.005)
            if time.time() >= end:
                break
    print(f"phase end {int(time.time() * 1000)}", flush=True)


if __name__ == "__main__":
    main()
