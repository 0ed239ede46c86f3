"""Workload f of bench/gpu/real_suite.sh: two Python threads, each launching
on its own CUDA stream for SECONDS (thread_matmul_work: bf16 GEMMs;
thread_elementwise_work: elementwise passes), each timing its steps with
events on its stream and checking its result.

  real_threads.py SECONDS
"""
import sys
import threading
import time

import torch

import real_common


def thread_matmul_work(seconds, out):
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        a = torch.randn(2048, 2048, device="cuda", dtype=torch.bfloat16) / 45
        eye = torch.eye(2048, device="cuda", dtype=torch.bfloat16)
        pairs, n = [], 0
        until = time.perf_counter() + seconds
        while time.perf_counter() < until:
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record(stream)
            for _ in range(4):
                a = a @ eye
            e.record(stream)
            pairs.append((s, e))
            n += 1
        stream.synchronize()
        out["matmul"] = {"steps": n, "finite": bool(torch.isfinite(a).all()), **real_common.cuda_event_ms(pairs)}


def thread_elementwise_work(seconds, out):
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        x = torch.zeros(1 << 20, device="cuda")
        pairs, n = [], 0
        until = time.perf_counter() + seconds
        while time.perf_counter() < until:
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record(stream)
            for _ in range(8):
                x = x + 1.0
            e.record(stream)
            pairs.append((s, e))
            n += 1
        stream.synchronize()
        exact = bool((x == 8.0 * n).all()) if 8 * n < (1 << 24) else True
        out["elementwise"] = {"steps": n, "exact": exact, **real_common.cuda_event_ms(pairs)}


def main(result):
    seconds = float(sys.argv[1])
    torch.cuda.init()
    out, errors = {}, []

    def guarded(fn):
        def body():
            try:
                fn(seconds, out)
            except BaseException as e:  # noqa: BLE001 - reported by the main thread
                errors.append(f"{fn.__name__}: {type(e).__name__}: {e}"[:300])
        return body

    threads = [threading.Thread(target=guarded(f), name=f.__name__) for f in (thread_matmul_work, thread_elementwise_work)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    result.update(out)
    if errors or not out.get("elementwise", {}).get("exact") or not out.get("matmul", {}).get("finite"):
        raise RuntimeError(f"thread failures: {errors or out}")


if __name__ == "__main__":
    real_common.run(main)
