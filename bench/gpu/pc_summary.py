"""Summary of bench/gpu/pc_sampling_check.sh's output directory:

  - the gpu_pc flame graph: value under each Python call site, per kernel,
    and the heaviest stacks from Python down to the stall reason;
  - the Triton kernel's hottest source line against its inner loop's lines;
  - per kernel, the stall-reason shares warpscope measured against Nsight
    Compute's (its PC sampling counters smsp__pcsamp_warps_issue_stalled_*,
    and WarpStateStats' per-issue stall ratios), for the top reasons;
  - the agent's PC sampling counters.

  pc_summary.py OUT"""
import csv
import glob
import json
import os
import sys
from collections import defaultdict

PREFIX = "smsp__pcsamp_warps_issue_stalled_"
NOT_ISSUED = "_not_issued"
SITES = ("model_step", "triton_step")


def read_collapsed(path):
    stacks = []
    for line in open(path):
        line = line.rstrip("\n")
        if not line or " " not in line:
            continue
        stack, value = line.rsplit(" ", 1)
        stacks.append((stack.split(";"), int(value)))
    return stacks


def kernel_family(name):
    if "row_dot_kernel" in name:
        return "triton row_dot_kernel"
    if "softmax" in name.lower():
        return "softmax"
    if any(s in name.lower() for s in ("gemm", "nvjet", "cutlass", "xmma", "sm90")):
        return "gemm"
    return "other"


def flame(out):
    stacks = read_collapsed(os.path.join(out, "gpu_pc.collapsed"))
    total = sum(v for _, v in stacks)
    print(f"gpu_pc: {len(stacks)} stacks, {total:,} estimated cycles")
    by = defaultdict(lambda: defaultdict(int))
    for frames, v in stacks:
        family = next((kernel_family(f) for f in frames if kernel_family(f) != "other"), "other")
        site = next((s for s in SITES if s in frames), "no call site")
        by[family][site] += v
    for family, sites in sorted(by.items()):
        n = sum(sites.values())
        print(f"  {family:24s} {n / max(total, 1):6.1%} of cycles; by call site: " +
              ", ".join(f"{s} {c / n:.1%}" for s, c in sorted(sites.items(), key=lambda x: -x[1])))
    print("heaviest stacks (root first; Python frames from <module>, then native, kernel, line, SASS, stall):")
    for frames, v in sorted(stacks, key=lambda x: -x[1])[:4]:
        start = next((i for i, f in enumerate(frames) if f == "<module>"), 0)
        shown = frames[start:]
        if len(shown) > 14:
            shown = shown[:5] + [f"... {len(shown) - 10} frames ..."] + shown[-5:]
        print(f"  {v / max(total, 1):6.2%}  " + " ; ".join(shown))


def source_views(out):
    views = []
    for path in sorted(glob.glob(os.path.join(out, "source_*.json"))):
        try:
            views.append(json.load(open(path)))
        except ValueError:
            print(f"{path}: not JSON")
    return views


def triton_line(out, views):
    words = open(os.path.join(out, "lines.txt")).read().split()
    script, inner = words[1], [int(w) for w in words[3:]]
    for v in views:
        if "row_dot_kernel" not in v.get("system_name", ""):
            continue
        lines = [l for l in v.get("lines", []) if l.get("line")]
        if not lines:
            print("triton: no source lines in the kernel's samples (sass", v.get("sass"), ")")
            return
        total = sum(l["value"] for l in v["lines"])
        ranked = sorted(lines, key=lambda l: -l["value"])
        print(f"triton row_dot_kernel: sass={v.get('sass')}, inner loop lines {inner} of {script}")
        for l in ranked[:5]:
            mark = "  <- inner loop" if l["line"] in inner and os.path.basename(l["file"]) == os.path.basename(script) else ""
            print(f"  {os.path.basename(l['file'])}:{l['line']:<4d} {l['value'] / total:6.1%}{mark}")
        hot = ranked[0]
        ok = hot["line"] in inner and os.path.basename(hot["file"]) == os.path.basename(script)
        print(f"  hottest line is the inner loop: {'yes' if ok else 'NO'}")
        return
    print("triton: no row_dot_kernel in the source views")


def base_reason(name):
    name = name[len(PREFIX):] if name.startswith(PREFIX) else name
    return name


def ours(views):
    """kernel system name -> (shares of all samples per reason, not-issued/all). The
    library sends a reason's samples split in two (its "_not_issued" twin, and the
    rest): their sum is the reason's "All Samples" in Nsight Compute's terms."""
    result = {}
    for v in views:
        all_, not_issued = defaultdict(int), 0
        for s in v.get("stalls", []):
            name = s["cupti_name"]
            if name.endswith(NOT_ISSUED):
                not_issued += s["value"]
                name = name[:-len(NOT_ISSUED)]
            all_[base_reason(name)] += s["value"]
        n = sum(all_.values())
        if n:
            result[v["system_name"]] = ({r: c / n for r, c in all_.items()}, not_issued / n)
    return result


def ncu(out):
    """kernel name -> {source: shares} from the raw CSV (one row per launch)."""
    path = os.path.join(out, "ncu.csv")
    if not os.path.exists(path):
        print("ncu: not run")
        return {}
    rows = list(csv.reader(line for line in open(path) if line.startswith('"')))
    if len(rows) < 3:
        print(f"ncu: no rows ({os.path.join(out, 'ncu_stderr.txt')})")
        return {}
    head = rows[0]
    name_col = head.index("Kernel Name")
    sampled = defaultdict(lambda: defaultdict(float))
    ratios = defaultdict(lambda: defaultdict(float))
    for row in rows[2:]:
        kernel = row[name_col]
        for h, cell in zip(head, row):
            try:
                value = float(cell.replace(",", ""))
            except ValueError:
                continue
            if h.startswith(PREFIX) and not h.endswith(NOT_ISSUED):
                sampled[kernel][base_reason(h)] += value
            elif h.startswith("smsp__average_warps_issue_stalled_") and h.endswith("_per_issue_active.ratio"):
                reason = h[len("smsp__average_warps_issue_stalled_"):-len("_per_issue_active.ratio")]
                if not reason.endswith(NOT_ISSUED):
                    ratios[kernel][reason] += value

    def shares(d):
        n = sum(d.values())
        return {r: c / n for r, c in d.items()} if n else {}

    return {k: {"pc sampling": shares(sampled.get(k, {})), "warp state": shares(ratios.get(k, {}))}
            for k in set(sampled) | set(ratios)}


def compare(out, views):
    mine, theirs = ours(views), ncu(out)
    worst = 0.0
    for kernel, (shares, not_issued) in sorted(mine.items(), key=lambda x: x[0]):
        match = next((k for k in theirs if k == kernel), None) or \
            next((k for k in theirs if kernel_family(k) == kernel_family(kernel) != "other"), None)
        print(f"{kernel[:70]} ({kernel_family(kernel)}; nothing issued in {not_issued:.2f} of its samples)")
        if match is None:
            print("  not in Nsight Compute's launches")
            continue
        for source, ref in theirs[match].items():
            if not ref:
                continue
            top = sorted(set(sorted(shares, key=lambda r: -shares[r])[:3]) | set(sorted(ref, key=lambda r: -ref[r])[:3]),
                         key=lambda r: -shares.get(r, 0))
            diffs = [abs(shares.get(r, 0) - ref.get(r, 0)) * 100 for r in top]
            if source == "pc sampling":
                worst = max(worst, max(diffs))
            print(f"  vs ncu {source:12s} max diff {max(diffs):5.1f} points: " +
                  ", ".join(f"{r} {shares.get(r, 0):.1%}/{ref.get(r, 0):.1%}" for r in top))
    print(f"largest difference over the top reasons against ncu's PC sampling: {worst:.1f} points")


def counters(out):
    path = os.path.join(out, "agent_metrics.txt")
    if os.path.exists(path):
        print("agent counters:")
        for line in open(path):
            if not line.startswith("#"):
                print("  " + line.rstrip())


def main():
    out = sys.argv[1]
    flame(out)
    views = source_views(out)
    triton_line(out, views)
    compare(out, views)
    counters(out)


if __name__ == "__main__":
    main()
