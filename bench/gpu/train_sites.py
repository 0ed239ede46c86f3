"""A training-style PyTorch loop with three call sites, each launching its own
kernels, for the GPU-time accuracy check (bench/gpu/gpu_time_check.sh):

  forward_matmul  x @ w          (GEMM kernels)
  activation      gelu, 6 times  (an elementwise kernel)
  normalize       softmax, 4x    (a softmax kernel)

  train_sites.py MODE STEPS OUT_JSON
MODE "plain": the steps, nothing else (warpscope watches from outside).
MODE "torch_profiler": the same steps under torch.profiler (CUDA activity);
the kernels' durations summed by name are the reference.
Both write OUT_JSON with the measured steps' Unix start/end (ms) and, for the
reference, {kernel name: total ns} and {site: total ns} (kernels mapped to
their sites by name)."""
import contextlib
import json
import sys
import time

import torch

N = 4096


def forward_matmul(x, w):
    return x @ w


def activation(y):
    for _ in range(6):
        y = torch.nn.functional.gelu(y)
    return y


def normalize(z):
    for _ in range(4):
        z = torch.softmax(z, dim=-1)
    return z


def step(x, w):
    y = forward_matmul(x, w)
    y = activation(y)
    return normalize(y)


def train(x, w, steps):
    for _ in range(steps):
        out = step(x, w)
    torch.cuda.synchronize()
    return out


def site_of(kernel_name):
    n = kernel_name.lower()
    if "gelu" in n:
        return "activation"
    if "softmax" in n:
        return "normalize"
    if "gemm" in n or "xmma" in n or "cutlass" in n or "sm90" in n or "nvjet" in n:
        return "forward_matmul"
    return "other"


def main():
    mode, steps, out_path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    torch.manual_seed(0)
    x = torch.randn(N, N, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(N, N, device="cuda", dtype=torch.bfloat16)
    train(x, w, 20)  # warm-up: cuBLAS heuristics, caching allocator
    time.sleep(2.5)  # the warm-up's kernels land in earlier seconds than the measured ones
    profiler = contextlib.nullcontext()
    if mode == "torch_profiler":
        from torch.profiler import ProfilerActivity, profile
        profiler = profile(activities=[ProfilerActivity.CUDA])
    result = {"mode": mode, "steps": steps}
    with profiler as prof:
        result["start_ms"] = int(time.time() * 1000)
        t0 = time.perf_counter()
        train(x, w, steps)
        result["seconds"] = time.perf_counter() - t0
        result["end_ms"] = int(time.time() * 1000)
    if mode == "torch_profiler":
        trace = out_path + ".trace.json"
        prof.export_chrome_trace(trace)
        with open(trace) as f:
            events = json.load(f)["traceEvents"]
        kernels, sites = {}, {}
        for e in events:
            if e.get("cat") != "kernel" or "dur" not in e:
                continue
            ns = float(e["dur"]) * 1000.0
            kernels[e["name"]] = kernels.get(e["name"], 0.0) + ns
            site = site_of(e["name"])
            sites[site] = sites.get(site, 0.0) + ns
        result["kernels_ns"] = kernels
        result["sites_ns"] = sites
    with open(out_path, "w") as f:
        json.dump(result, f, indent=1)
    print(f"{mode}: {steps} steps in {result['seconds']:.3f} s", flush=True)


if __name__ == "__main__":
    main()
