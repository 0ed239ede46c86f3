"""What nvmlDeviceGetSamples (the driver's buffered samples) costs and gives,
against polling the same values once per interval (the agent's collector), on
a real GPU. A probe for a cheaper NVML collection (docs/benchmarks.md, GPU
metrics: cost).

  python3 nvml_samples_probe.py [SECONDS_PER_MODE]

For polling every 1 s, and buffered reads every 1 s and every 5 s, prints the
CPU time per second of wall time spent in NVML, and for the buffered reads
how many samples per second each type holds and their spacing."""
import ctypes
import sys
import time

nvml = ctypes.CDLL("libnvidia-ml.so.1")


class Value(ctypes.Union):
    _fields_ = [("dVal", ctypes.c_double), ("uiVal", ctypes.c_uint), ("ulVal", ctypes.c_ulong),
                ("ullVal", ctypes.c_ulonglong), ("sllVal", ctypes.c_longlong)]


class Sample(ctypes.Structure):
    _fields_ = [("timeStamp", ctypes.c_ulonglong), ("sampleValue", Value)]


class Utilization(ctypes.Structure):
    _fields_ = [("gpu", ctypes.c_uint), ("memory", ctypes.c_uint)]


assert ctypes.sizeof(Sample) == 16
TYPES = {"power": 0, "gpu_util": 1, "mem_util": 2, "sm_clock": 5, "mem_clock": 6}


def cpu():
    return time.thread_time_ns()


def main():
    seconds = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    assert nvml.nvmlInit_v2() == 0
    dev = ctypes.c_void_p()
    assert nvml.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(dev)) == 0
    buf = (Sample * 4096)()

    # 1. Polling, as the collector does: utilization, power, two clocks each second.
    u = Utilization()
    p = ctypes.c_uint()
    c = ctypes.c_uint()
    spent = 0
    t_end = time.time() + seconds
    while time.time() < t_end:
        t0 = cpu()
        nvml.nvmlDeviceGetUtilizationRates(dev, ctypes.byref(u))
        nvml.nvmlDeviceGetPowerUsage(dev, ctypes.byref(p))
        nvml.nvmlDeviceGetClockInfo(dev, 1, ctypes.byref(c))
        nvml.nvmlDeviceGetClockInfo(dev, 2, ctypes.byref(c))
        spent += cpu() - t0
        time.sleep(1)
    print(f"poll every 1s: util+power+2 clocks cpu_us_per_s={spent / 1e3 / seconds:.0f}")

    # 2. Buffered samples, read every `every` seconds.
    for every in (1, 5):
        last = {k: 0 for k in TYPES}
        counts = {k: 0 for k in TYPES}
        gaps = {k: [] for k in TYPES}
        values = {k: [] for k in TYPES}
        spent = 0
        status = {}
        t_end = time.time() + seconds
        first = True
        while time.time() < t_end:
            t0 = cpu()
            for name, kind in TYPES.items():
                vt = ctypes.c_int()
                n = ctypes.c_uint(len(buf))
                rc = nvml.nvmlDeviceGetSamples(dev, kind, ctypes.c_ulonglong(last[name]), ctypes.byref(vt),
                                               ctypes.byref(n), buf)
                status[name] = rc
                if rc == 0 and n.value:
                    ts = [buf[i].timeStamp for i in range(n.value)]
                    if not first:
                        counts[name] += n.value
                        gaps[name] += [b - a for a, b in zip(ts, ts[1:])]
                        values[name] += [buf[i].sampleValue.uiVal for i in range(n.value)]
                    last[name] = max(ts)
            spent += cpu() - t0
            first = False
            time.sleep(every)
        print(f"samples every {every}s: cpu_us_per_s={spent / 1e3 / seconds:.0f} status={status}")
        for name in TYPES:
            g = sorted(gaps[name])
            med = g[len(g) // 2] / 1e3 if g else 0
            v = values[name]
            print(f"  {name}: samples_per_s={counts[name] / seconds:.1f} median_gap_ms={med:.0f}"
                  f" mean_value={sum(v) / len(v) if v else 0:.1f}")
    nvml.nvmlShutdown()


if __name__ == "__main__":
    main()
