"""The CPU cost of each NVML query the agent's collector makes, called once a
second from one thread (time.thread_time_ns around each call), on a real GPU.
Found that nvmlDeviceGetProcessUtilization, with a buffer of the size NVML
asks for, costs ~2.9 ms per call on an H200 while all the others together
cost under 1 ms (docs/benchmarks.md, "GPU metrics from NVML").

  python3 nvml_call_costs.py SECONDS

Prints the mean CPU microseconds per call for each query."""
import ctypes
import sys
import time

nvml = ctypes.CDLL("libnvidia-ml.so.1")


class Utilization(ctypes.Structure):
    _fields_ = [("gpu", ctypes.c_uint), ("memory", ctypes.c_uint)]


class MemoryV2(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint), ("total", ctypes.c_ulonglong), ("reserved", ctypes.c_ulonglong),
                ("free", ctypes.c_ulonglong), ("used", ctypes.c_ulonglong)]


class ProcessSample(ctypes.Structure):
    _fields_ = [("pid", ctypes.c_uint), ("timeStamp", ctypes.c_ulonglong), ("smUtil", ctypes.c_uint),
                ("memUtil", ctypes.c_uint), ("encUtil", ctypes.c_uint), ("decUtil", ctypes.c_uint)]


class ProcessInfo(ctypes.Structure):
    _fields_ = [("pid", ctypes.c_uint), ("usedGpuMemory", ctypes.c_ulonglong), ("gpuInstanceId", ctypes.c_uint),
                ("computeInstanceId", ctypes.c_uint)]


class FieldValue(ctypes.Structure):
    _fields_ = [("fieldId", ctypes.c_uint), ("scopeId", ctypes.c_uint), ("timestamp", ctypes.c_longlong),
                ("latencyUsec", ctypes.c_longlong), ("valueType", ctypes.c_uint), ("nvmlReturn", ctypes.c_uint),
                ("value", ctypes.c_ulonglong)]


assert ctypes.sizeof(MemoryV2) == 40 and ctypes.sizeof(ProcessSample) == 32
assert ctypes.sizeof(ProcessInfo) == 24 and ctypes.sizeof(FieldValue) == 40


def main():
    seconds = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    assert nvml.nvmlInit_v2() == 0
    dev = ctypes.c_void_p()
    assert nvml.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(dev)) == 0
    u, v, r = Utilization(), ctypes.c_uint(), ctypes.c_ulonglong()
    mem = MemoryV2()
    mem.version = ctypes.sizeof(MemoryV2) | (2 << 24)
    needed = ctypes.c_uint(0)
    nvml.nvmlDeviceGetProcessUtilization(dev, None, ctypes.byref(needed), ctypes.c_ulonglong(0))
    samples = (ProcessSample * max(needed.value, 1))()
    infos = (ProcessInfo * 64)()
    fields = (FieldValue * 2)()
    last_seen = [0]

    def process_utilization():
        count = ctypes.c_uint(len(samples))
        rc = nvml.nvmlDeviceGetProcessUtilization(dev, samples, ctypes.byref(count), ctypes.c_ulonglong(last_seen[0]))
        if rc == 0 and count.value:
            last_seen[0] = max(samples[i].timeStamp for i in range(count.value))
        return rc

    def ecc_fields():
        fields[0].fieldId, fields[1].fieldId = 3, 4  # NVML_FI_DEV_ECC_SBE/DBE_VOL_TOTAL
        return nvml.nvmlDeviceGetFieldValues(dev, 2, fields)

    calls = {
        "utilization": lambda: nvml.nvmlDeviceGetUtilizationRates(dev, ctypes.byref(u)),
        "power": lambda: nvml.nvmlDeviceGetPowerUsage(dev, ctypes.byref(v)),
        "sm_clock": lambda: nvml.nvmlDeviceGetClockInfo(dev, 1, ctypes.byref(v)),
        "memory_clock": lambda: nvml.nvmlDeviceGetClockInfo(dev, 2, ctypes.byref(v)),
        "memory_v2": lambda: nvml.nvmlDeviceGetMemoryInfo_v2(dev, ctypes.byref(mem)),
        "temperature": lambda: nvml.nvmlDeviceGetTemperature(dev, 0, ctypes.byref(v)),
        "clock_event_reasons": lambda: nvml.nvmlDeviceGetCurrentClocksEventReasons(dev, ctypes.byref(r)),
        "power_limit": lambda: nvml.nvmlDeviceGetEnforcedPowerLimit(dev, ctypes.byref(v)),
        "running_processes": lambda: nvml.nvmlDeviceGetComputeRunningProcesses_v3(
            dev, ctypes.byref(ctypes.c_uint(len(infos))), infos),
        "ecc_field_values": ecc_fields,
        "process_utilization": process_utilization,
    }
    total = {k: 0 for k in calls}
    codes = {}
    for _ in range(seconds):
        for name, call in calls.items():
            t0 = time.thread_time_ns()
            codes[name] = call()
            total[name] += time.thread_time_ns() - t0
        time.sleep(1)
    print(" ".join(f"{k}={total[k] / 1e3 / seconds:.0f}us" for k in calls),
          f"all={sum(total.values()) / 1e3 / seconds:.0f}us", "return_codes", codes)
    nvml.nvmlShutdown()


if __name__ == "__main__":
    main()
