"""Compares warpscope's launch calls with torch.profiler's (launch_links_check.sh):
  launch_links_compare.py OUT
warpscope: the kernels of OUT/trace.json (/api/v1/gpu/trace) with their launch
call, and OUT/chrome_trace.json's calls and flows (every flow must start on
the launching thread inside a call and end at a kernel's start on a GPU lane).
Reference: OUT/reference.json.trace.json (torch.profiler), its cuda_runtime
launch events joined to kernels by correlation id. Prints per side the
kernels, the share linked to a launch call, and the medians of the call's
duration and of launch-to-kernel-start."""
import json
import statistics
import sys

out = sys.argv[1]
trace = json.load(open(f"{out}/trace.json"))
acts = [a for s in trace["streams"] for a in s["activities"] if a[3] == 0]
linked = [a for a in acts if a[6] > 0]
apis = trace["launch_apis"]
ours = {
    "kernels": len(acts),
    "linked": len(linked),
    "call_us": statistics.median(a[7] for a in linked) / 1e3 if linked else None,
    "launch_to_start_us": statistics.median(a[0] - a[6] for a in linked) / 1e3 if linked else None,
    "calls_before_kernel": sum(1 for a in linked if a[6] <= a[0]),
    "apis": sorted({apis[a[9]] for a in linked}),
}

chrome = json.load(open(f"{out}/chrome_trace.json"))["traceEvents"]
calls = [e for e in chrome if e["ph"] == "X" and e.get("cat") == "cuda_api"]
kernels = {(e["tid"], e["ts"]) for e in chrome if e["ph"] == "X" and e.get("cat") == "kernel"}
starts = {e["id"]: e for e in chrome if e["ph"] == "s"}
ends = {e["id"]: e for e in chrome if e["ph"] == "f"}
by_thread = {}
for c in calls:
    by_thread.setdefault(c["tid"], []).append((float(c["ts"]), float(c["ts"]) + float(c["dur"])))
bad = 0
for i, s in starts.items():
    f = ends.get(i)
    inside = any(a <= float(s["ts"]) <= b for a, b in by_thread.get(s["tid"], []))
    if f is None or not inside or (f["tid"], f["ts"]) not in kernels or f["tid"] < 1e9:
        bad += 1
ours["chrome_cpu_sample_events"] = sum(1 for e in chrome if e.get("cat") == "cpu_sample")
ours["chrome_cpu_tracks"] = sorted(e["args"]["name"] for e in chrome if e["ph"] == "M" and e["args"].get("name", "").startswith("CPU samples"))
ours["chrome_calls"] = len(calls)
ours["chrome_flows"] = len(starts)
ours["chrome_flows_bad"] = bad

ref_events = json.load(open(f"{out}/reference.json.trace.json"))["traceEvents"]
runtime = {}
for e in ref_events:
    if e.get("cat") == "cuda_runtime" and "Launch" in e.get("name", ""):
        runtime[e["args"].get("correlation")] = e
ref_kernels = [e for e in ref_events if e.get("cat") == "kernel" and "dur" in e]
ref_linked = [(k, runtime[k["args"]["correlation"]]) for k in ref_kernels if k["args"].get("correlation") in runtime]
# The reference profiles the whole run; its two middle seconds compare with ours.
if ref_kernels:
    ts = sorted(float(k["ts"]) for k in ref_kernels)
    mid = (ts[0] + ts[-1]) / 2
    ref_linked = [(k, r) for k, r in ref_linked if mid - 1e6 <= float(k["ts"]) < mid + 1e6]
    ref_kernels = [k for k in ref_kernels if mid - 1e6 <= float(k["ts"]) < mid + 1e6]
ref = {
    "kernels": len(ref_kernels),
    "linked": len(ref_linked),
    "call_us": statistics.median(float(r["dur"]) for _, r in ref_linked) if ref_linked else None,
    "launch_to_start_us": statistics.median(float(k["ts"]) - float(r["ts"]) for k, r in ref_linked) if ref_linked else None,
    "apis": sorted({r["name"] for _, r in ref_linked}),
}
print("warpscope:", json.dumps(ours))
print("torch.profiler:", json.dumps(ref))
if ours["linked"] and ref["linked"]:
    print(f"linked share: warpscope {ours['linked'] / ours['kernels']:.4f}, reference {ref['linked'] / ref['kernels']:.4f}")
    print(f"call duration median ratio (warpscope / reference): {ours['call_us'] / ref['call_us']:.3f}")
    print(f"launch-to-start median ratio: {ours['launch_to_start_us'] / ref['launch_to_start_us']:.3f}")
