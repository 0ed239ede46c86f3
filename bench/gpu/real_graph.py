"""Workload c (Python) of bench/gpu/real_suite.sh: raw CUDA-graph capture and
replay with torch.cuda.CUDAGraph, 8 captured elementwise ops replayed in a
loop for SECONDS and timed with CUDA events, captured again every RECAPTURE
replays (new captures while the profiler attaches and detaches); each graph's
result is checked against the same ops run eagerly.

  real_graph.py SECONDS [RECAPTURE]
"""
import sys
import time

import torch

import real_common


def eight_ops(x):
    y = x * 1.5
    y = y + 0.25
    y = torch.sin(y)
    y = y * y
    y = y - 0.5
    y = torch.relu(y)
    y = y + x
    return y * 0.5


def capture(static_x):
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up on a side stream before capture, as PyTorch asks
        for _ in range(3):
            eight_ops(static_x)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_y = eight_ops(static_x)
    return graph, static_y


def main(result):
    seconds = float(sys.argv[1])
    recapture = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
    static_x = torch.randn(1 << 20, device="cuda")
    graph, static_y = capture(static_x)
    pairs, replays, captures, worst = [], 0, 1, 0.0
    until = time.perf_counter() + seconds
    while time.perf_counter() < until:
        if replays and replays % recapture == 0:
            torch.cuda.synchronize()
            worst = max(worst, (static_y - eight_ops(static_x)).abs().max().item())
            graph, static_y = capture(static_x)
            captures += 1
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        graph.replay()
        e.record()
        pairs.append((s, e))
        replays += 1
    torch.cuda.synchronize()
    worst = max(worst, (static_y - eight_ops(static_x)).abs().max().item())
    result.update({"replays": replays, "captures": captures, "max_abs_err": worst, **real_common.cuda_event_ms(pairs)})
    if not worst < 1e-5:
        raise RuntimeError(f"graph replay result differs from eager by {worst}")


if __name__ == "__main__":
    real_common.run(main)
