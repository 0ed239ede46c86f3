"""Summarises bench/gpu/energy_check.sh's output directory:
  energy_summary.py OUT
GPU joules from /api/v1/energy against nvidia-smi's power.draw (and
power.draw.instant) integrated over the same range (trapezoids between the
100 ms readings), and the joules and GPU time per call site (the frame
below the first of dense_matmul / stream_add in each collapsed stack)."""
import datetime
import json
import os
import sys

out = sys.argv[1]
frm, to = (int(v) for v in open(os.path.join(out, "range.txt")).read().split())


def smi_joules(column):
    points = []
    for line in open(os.path.join(out, "smi.csv")):
        parts = [p.strip() for p in line.split(",")]
        try:
            ts = datetime.datetime.strptime(parts[0], "%Y/%m/%d %H:%M:%S.%f")
            watts = float(parts[column])
        except (ValueError, IndexError):
            continue
        # nvidia-smi prints local time; the device machine runs on UTC.
        points.append((ts.replace(tzinfo=datetime.timezone.utc).timestamp() * 1000, watts))
    total = 0.0
    for (t0, w0), (t1, w1) in zip(points, points[1:]):
        a, b = max(t0, frm), min(t1, to)
        if b <= a:
            continue
        # Linear between the readings, integrated over [a, b).
        wa = w0 + (w1 - w0) * (a - t0) / (t1 - t0)
        wb = w0 + (w1 - w0) * (b - t0) / (t1 - t0)
        total += (wa + wb) / 2 * (b - a) / 1000
    return total, len(points)


energy = json.load(open(os.path.join(out, "energy_gpu.json")))
gpu = [g for g in energy["groups"] if "gpu" in g["labels"]]
ours = sum(g["gpu_joules"] for g in gpu)
print(f"range {(to - frm) / 1000:.0f} s")
for column, name in ((1, "power.draw"), (2, "power.draw.instant")):
    smi, n = smi_joules(column)
    if smi > 0:
        print(f"warpscope {ours:.0f} J ({'+'.join(g['gpu_source'] for g in gpu)}) vs nvidia-smi {name} "
              f"{smi:.0f} J ({n} readings): {100 * (ours / smi - 1):+.2f} %")
print(f"busy {sum(g['gpu_busy_joules'] for g in gpu):.0f} J, idle {sum(g['gpu_idle_joules'] for g in gpu):.0f} J")


def per_site(name):
    sites = {}
    for line in open(os.path.join(out, name)):
        stack, _, value = line.rstrip("\n").rpartition(" ")
        site = "other"
        for frame in stack.split(";"):
            if "dense_matmul" in frame or "stream_add" in frame:
                site = "dense_matmul" if "dense_matmul" in frame else "stream_add"
                break
        sites[site] = sites.get(site, 0) + int(value)
    return sites


joules = per_site("gpu_energy.collapsed")
times = per_site("gpu_time.collapsed")
tj, tt = sum(joules.values()) or 1, sum(times.values()) or 1
for site in sorted(set(joules) | set(times)):
    print(f"{site}: {joules.get(site, 0) / 1e6:.0f} J ({100 * joules.get(site, 0) / tj:.1f} %), "
          f"GPU time {times.get(site, 0) / 1e9:.2f} s ({100 * times.get(site, 0) / tt:.1f} %)")
print(f"joules in the profile {tj / 1e6:.0f} J of {sum(g['gpu_busy_joules'] for g in gpu):.0f} busy")
