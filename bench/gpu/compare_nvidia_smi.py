"""Compares the GPU metrics warpscope-server stored from the agent with
nvidia-smi's readings taken at the same time (bench/gpu/nvml_vs_smi.sh).

  compare_nvidia_smi.py OUT_DIR JOB_PID

OUT_DIR holds smi.csv (nvidia-smi --query-gpu ... -lms 1000), phases.txt
(the job's "phase NAME UNIX_MS" lines) and the server's answers
(metric_<name>.json, /api/v1/metrics?step=1s). Seconds within 2 s of a phase
change are left out of the comparison: two readers sampling at different
moments of a changing load legitimately disagree there."""
import datetime
import json
import statistics
import sys


def load_series(out, name):
    with open(f"{out}/metric_{name}.json") as f:
        answer = json.load(f)
    series = {}
    for s in answer["series"]:
        key = tuple(sorted(s["labels"].items()))
        series[key] = {p[0] // 1000: p[3] for p in s["points"]}  # second -> avg
    return series


def main():
    out, job_pid = sys.argv[1], sys.argv[2]
    with open(f"{out}/smi_fields.txt") as f:
        fields = f.read().strip().split(",")
    rows = []
    with open(f"{out}/smi.csv") as f:
        for line in f:
            parts = [p.strip() for p in line.split(",")]
            if len(parts) != len(fields):
                continue
            row = dict(zip(fields, parts))
            ts = datetime.datetime.strptime(row["timestamp"], "%Y/%m/%d %H:%M:%S.%f")
            row["sec"] = int(ts.replace(tzinfo=datetime.timezone.utc).timestamp()) if "--utc" in sys.argv else int(ts.timestamp())
            rows.append(row)
    changes = []
    with open(f"{out}/phases.txt") as f:
        for line in f:
            p = line.split()
            if len(p) == 3 and p[0] == "phase":
                changes.append(int(p[2]) // 1000)
    near_change = lambda s: any(abs(s - c) <= 2 for c in changes)

    util = next(iter(load_series(out, "gpu_utilization").values()), {})
    power = next(iter(load_series(out, "gpu_power").values()), {})
    mem = next(iter(load_series(out, "gpu_memory_used").values()), {})
    result = {"smi_rows": len(rows), "our_seconds": len(util)}
    diffs = {"util": [], "power_rel": [], "mem_mib": []}
    for r in rows:
        s = r["sec"]
        if near_change(s) or s not in util:
            continue
        diffs["util"].append(abs(util[s] - float(r["utilization.gpu"])))
        smi_power = float(r.get("power.draw.average") or r["power.draw"])
        if s in power and smi_power > 0:
            diffs["power_rel"].append(abs(power[s] - smi_power) / smi_power)
        if s in mem:
            diffs["mem_mib"].append(abs(mem[s] / (1 << 20) - float(r["memory.used"])))
    for k, v in diffs.items():
        if not v:
            continue
        v = sorted(v)
        result[k] = {"n": len(v), "median": round(statistics.median(v), 4), "p90": round(v[int(0.9 * (len(v) - 1))], 4),
                     "max": round(v[-1], 4)}
    result["util_within_5_points"] = round(sum(d <= 5 for d in diffs["util"]) / max(1, len(diffs["util"])), 3)
    result["power_within_5_percent"] = round(sum(d <= 0.05 for d in diffs["power_rel"]) / max(1, len(diffs["power_rel"])), 3)
    result["memory_exact"] = round(sum(d < 1 for d in diffs["mem_mib"]) / max(1, len(diffs["mem_mib"])), 3)
    proc = load_series(out, "gpu_process_sm_utilization")
    result["process_series"] = [dict(k) for k in proc]
    result["job_pid_named"] = any(dict(k).get("pid") == job_pid for k in proc)
    proc_mem = load_series(out, "gpu_process_memory_used")
    result["job_pid_memory_series"] = any(dict(k).get("pid") == job_pid for k in proc_mem)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
