"""Workload g of bench/gpu/real_suite.sh: torch.profiler inside a process
that warpscope's injection library also profiles. STEPS training steps
unprofiled ("before"), STEPS under torch.profiler (CUDA activity only,
"profiled"), AFTER_STEPS unprofiled again ("after"; default 3 x STEPS, long
enough for an adaptive period); each phase's Unix start and end (ms).
Prints how many kernels torch.profiler recorded (the exported trace's kernel
events, and prof.events()' CUDA events): the runner compares them with the
same script run without the injection library, and asks the server for
this process's GPU time in the "after" phase (warpscope's recording must
resume once the profiler stops).

  real_profiler_inside.py STEPS [AFTER_STEPS]
"""
import json
import os
import sys
import time

import torch

import real_common


def run_steps(model, opt, x, steps):
    for _ in range(steps):
        loss = model(x).float().pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    torch.cuda.synchronize()


def phase(result, name, fn):
    start = int(time.time() * 1000)
    fn()
    result[name] = {"start_ms": start, "end_ms": int(time.time() * 1000)}


def main(result):
    steps = int(sys.argv[1])
    after = int(sys.argv[2]) if len(sys.argv) > 2 else 3 * steps
    from torch.profiler import ProfilerActivity, profile
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4096, 4096), torch.nn.GELU(), torch.nn.Linear(4096, 4096),
                                torch.nn.GELU(), torch.nn.Linear(4096, 4096)).cuda().to(torch.bfloat16)
    opt = torch.optim.SGD(model.parameters(), lr=1e-4)
    x = torch.randn(8192, 4096, device="cuda", dtype=torch.bfloat16)
    run_steps(model, opt, x, 5)  # warm-up
    phase(result, "before", lambda: run_steps(model, opt, x, steps))
    prof = profile(activities=[ProfilerActivity.CUDA])
    result["profiled"] = {"start_ms": int(time.time() * 1000)}
    with prof:
        run_steps(model, opt, x, steps)
    result["profiled"]["end_ms"] = int(time.time() * 1000)
    phase(result, "after", lambda: run_steps(model, opt, x, after))
    result["steps"] = {"before": steps, "profiled": steps, "after": after}
    trace = f"/tmp/ws-real-prof-{os.getpid()}.json"
    prof.export_chrome_trace(trace)
    with open(trace) as f:
        events = json.load(f)["traceEvents"]
    os.unlink(trace)
    result["profiler_kernels"] = sum(1 for e in events if e.get("cat") == "kernel")
    try:
        from torch.autograd import DeviceType
        result["profiler_cuda_events"] = sum(1 for e in prof.events() if e.device_type == DeviceType.CUDA)
    except Exception as e:  # noqa: BLE001 - the trace's count is the one compared
        result["profiler_cuda_events_error"] = str(e)[:200]
    result["profiler_kernels_per_step"] = round(result["profiler_kernels"] / steps, 3)


if __name__ == "__main__":
    real_common.run(main)
