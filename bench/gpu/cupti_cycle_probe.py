"""Drives bench/gpu/cupti_cycle_probe.c inside a PyTorch process.

  python3 cupti_cycle_probe.py PROBE.so MODE STRATEGY [SECONDS]

MODE: graph (a torch.cuda.CUDAGraph replayed and timed with events while the
probe records in windows), train (a transformer training step with backward,
whose backward kernels come from autograd threads), cost (a launch-heavy loop's
iterations/s after one window, in the idle state the strategy leaves),
kineto (torch.profiler inside the process while the probe cycles).
STRATEGY: -1 no probe, 0 finalize, 1 unsubscribe, 2 stay subscribed.
Prints one JSON line.
"""
import ctypes
import glob
import json
import os
import sys
import time

import torch

so, mode, strategy = sys.argv[1], sys.argv[2], int(sys.argv[3])
seconds = float(sys.argv[4]) if len(sys.argv) > 4 else 8.0
torch.cuda.init()
torch.zeros(1, device="cuda")


def cupti_path():
    with open("/proc/self/maps") as f:
        for line in f:
            if "libcupti.so" in line:
                return line.split()[-1]
    base = os.path.dirname(torch.__file__)
    for p in glob.glob(os.path.join(base, "..", "nvidia", "*", "lib", "libcupti.so*")):
        return p
    return "libcupti.so.13"


out = {"mode": mode, "strategy": strategy}
probe = None
if strategy >= 0:
    probe = ctypes.CDLL(so)
    out["cupti"] = cupti_path()
    out["cupti_version"] = probe.probe_load(out["cupti"].encode())


def start(window_ms=100, period_ms=300, max_windows=100000):
    if probe is not None:
        probe.probe_start(strategy, window_ms, period_ms, max_windows)


def finish():
    if probe is None:
        return
    probe.probe_stop()
    arr = (ctypes.c_int64 * 7)()
    n = probe.probe_window(0, arr)
    rows = []
    for w in range(max(n, 0)):
        probe.probe_window(w, arr)
        rows.append(list(arr))
    out["windows"] = len(rows)
    keys = ["cb_main", "cb_other", "rec_main", "rec_other", "rec_unknown", "attach", "other_threads"]
    out["first"] = [dict(zip(keys, r)) for r in rows[:3]]
    out["last"] = [dict(zip(keys, r)) for r in rows[-3:]]
    out["totals"] = {k: sum(r[i] for r in rows) for i, k in enumerate(keys[:5])}
    out["errors"] = probe.probe_errors()
    out["last_error"] = probe.probe_last_error()
    out["finalizes"] = probe.probe_finalizes()


try:
    if mode == "graph":
        x = torch.randn(1 << 20, device="cuda")
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                y = x * 2
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            y = x
            for _ in range(8):
                y = y * 1.0001 + 0.5
        start()
        t_end = time.time() + seconds
        replays = 0
        while time.time() < t_end:
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            for _ in range(50):
                g.replay()
            b.record()
            b.synchronize()
            a.elapsed_time(b)
            replays += 50
        torch.cuda.synchronize()
        out["replays"] = replays
        finish()
    elif mode == "train":
        layer = torch.nn.TransformerEncoderLayer(512, 8, 2048, batch_first=True)
        model = torch.nn.TransformerEncoder(layer, 4).cuda()
        opt = torch.optim.AdamW(model.parameters(), fused=True)
        data = torch.randn(16, 256, 512, device="cuda")
        for _ in range(3):
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = model(data).float().pow(2).mean()
            loss.backward()
            opt.step()
            opt.zero_grad()
        torch.cuda.synchronize()
        start()
        t_end = time.time() + seconds
        steps = 0
        while time.time() < t_end:
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = model(data).float().pow(2).mean()
            loss.backward()
            opt.step()
            opt.zero_grad()
            steps += 1
        torch.cuda.synchronize()
        out["steps"] = steps
        finish()
    elif mode == "cost":
        x = torch.zeros(16, device="cuda")

        def burst(n):
            for _ in range(n):
                x.add_(1)
            torch.cuda.synchronize()

        burst(2000)
        start(window_ms=200, period_ms=200, max_windows=1)
        t0 = time.time()
        while time.time() - t0 < 1.0:
            burst(500)
        t0 = time.time()
        n = 0
        while time.time() - t0 < seconds:
            burst(500)
            n += 500
        out["launches_per_s"] = n / (time.time() - t0)
        finish()
    elif mode == "kineto":
        from torch.profiler import ProfilerActivity, profile

        x = torch.randn(1024, 1024, device="cuda")

        def steps(n):
            for _ in range(n):
                y = x @ x
                y = torch.relu(y) + 1
            torch.cuda.synchronize()

        start(window_ms=100, period_ms=250)
        steps(200)
        time.sleep(0.6)
        with profile(activities=[ProfilerActivity.CUDA, ProfilerActivity.CPU]) as prof:
            steps(100)
        evts = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
        out["profiler_kernels"] = len(evts)
        steps(200)
        time.sleep(1.0)
        if probe is not None:
            finish()
            out["second_subscriber_now"] = probe.probe_try_subscribe()
    out["ok"] = True
except Exception as e:  # noqa: BLE001 - the probe reports whatever broke
    out["ok"] = False
    out["exception"] = repr(e)[:300]
print(json.dumps(out), flush=True)
