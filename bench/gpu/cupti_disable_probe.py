"""Drives bench/gpu/cupti_disable_probe.c inside a PyTorch process: N kernels
(2048² matmuls, about 0.05-0.1 ms each) launched with CONCURRENT_KERNEL
activity on, then the kind disabled while most of them are still queued on
the GPU (or, for the reference, after a synchronize), then a synchronize
and a forced flush. Prints one JSON line: kernels launched, records
received, for each order.

  python3 cupti_disable_probe.py PROBE.so [N]
"""
import ctypes
import glob
import json
import os
import sys

import torch

so = sys.argv[1]
n = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
torch.cuda.init()
a = torch.randn(2048, 2048, device="cuda")
b = torch.randn(2048, 2048, device="cuda")
torch.cuda.synchronize()


def cupti_path():
    base = os.path.dirname(torch.__file__)
    for p in glob.glob(os.path.join(base, "..", "nvidia", "*", "lib", "libcupti.so*")):
        return p
    return "libcupti.so"


probe = ctypes.CDLL(so)
probe.probe_records.restype = ctypes.c_uint64
out = {"cupti": cupti_path(), "load": probe.probe_load(cupti_path().encode()), "n": n}


def run(disable_before_sync):
    before = probe.probe_records()
    assert probe.probe_enable() == 0
    for _ in range(n):
        torch.mm(a, b)
    if disable_before_sync:
        probe.probe_disable()
        torch.cuda.synchronize()
    else:
        torch.cuda.synchronize()
        probe.probe_disable()
    probe.probe_flush()
    return probe.probe_records() - before


for order in ("sync_then_disable", "disable_then_sync", "sync_then_disable", "disable_then_sync"):
    out.setdefault(order, []).append(run(order == "disable_then_sync"))
print(json.dumps(out))
