"""Summarises bench/gpu/insights_check.sh: per job, the insights in the
order of their saving (kind, severity, target, saving, summary, the ranges
they rest on; for sync_heavy its waiting and the part of it with no GPU
work, which sets its severity) and the job's activity analyses over its range
(busy and idle shares of the observed time).

  insights_summary.py OUT JOB...
"""
import json
import sys


def metric_sums(out, job, name):
    try:
        answer = json.load(open(f"{out}/metric_{job}_{name}.json"))
    except (OSError, ValueError):
        return {}
    sums = {}
    for s in answer.get("series", []):
        key = "/".join(s["labels"].values()) or name
        # points: [t_ms, min, max, avg] of 1 s steps, one reading each: the avgs add up.
        sums[key] = sum(p[3] for p in s["points"])
    return sums


def main():
    out = sys.argv[1]
    for job in sys.argv[2:]:
        print(f"== {job}")
        try:
            answer = json.load(open(f"{out}/insights_{job}.json"))
        except (OSError, ValueError) as e:
            print(f"  no insights answer: {e}")
            continue
        insights = answer.get("insights", [])
        if not insights:
            print("  no insight")
        for x in insights:
            target = ",".join(f"{k}={v}" for k, v in sorted(x["target"].items()))
            print(f"  {x['kind']:20s} {x['severity']:6s} saving {x['saving_gpu_seconds']:.1f} GPU-s "
                  f"({100 * x['saving_share']:.0f}%) {target}")
            print(f"    {x['summary']}")
            # The ranges are where the problem happened (the dips), not the whole job.
            ranges = x.get("ranges", [])
            if ranges:
                spans = [(r["to"] - r["from"]) / 1000 for r in ranges]
                print(f"    ranges {len(ranges)}, {sum(spans):.0f} s, longest {max(spans):.0f} s")
            numbers = x.get("numbers", {})
            if x["kind"] == "sync_heavy":
                # Severity follows the idle time under the waits, not the waiting.
                print(f"    waited {numbers.get('wait_seconds', 0):.2f} s, with no GPU work "
                      f"{numbers.get('wait_without_gpu_work_seconds', 0):.2f} s")
            for f in x.get("functions", [])[:3]:
                print(f"    site {f['share']:.2f} {f['name']}")
            if x.get("sequence"):
                print(f"    sequence {' -> '.join(x['sequence'])}")
        # The analyses are sums of seconds (one step): shares of the observed time.
        busy = metric_sums(out, job, "cuda_gpu_busy_seconds")
        idle = metric_sums(out, job, "cuda_gpu_idle_seconds")
        observed = sum(busy.values()) + sum(idle.values())
        if observed > 0:
            parts = ", ".join(f"{k} {100 * v / observed:.1f}%" for k, v in sorted({**busy, **idle}.items()))
            print(f"  analyses: observed {observed:.1f} s: {parts}")
        kernels = sum(metric_sums(out, job, "cuda_kernels").values())
        short = sum(metric_sums(out, job, "cuda_short_kernels").values())
        if kernels > 0:
            print(f"  kernels {kernels:.0f}, shorter than their launch call {100 * short / kernels:.1f}%")
        steps = (lambda r: (int(r[1]) - int(r[0])) / 1000)(open(f"{out}/range_{job}.txt").read().split())
        util = metric_sums(out, job, "gpu_utilization")
        if util:
            print(f"  gpu_utilization mean {list(util.values())[0] / steps:.1f}%")
        for gpm in ("gpu_dram_bandwidth", "gpu_tensor_activity"):
            v = metric_sums(out, job, gpm)
            if v:
                print(f"  {gpm} mean {list(v.values())[0] / steps:.1f}%")
        throttled = metric_sums(out, job, "gpu_clocks_throttled")
        if throttled:
            print("  throttled share " + ", ".join(f"{k} {v / steps:.2f}" for k, v in sorted(throttled.items())))


if __name__ == "__main__":
    main()
