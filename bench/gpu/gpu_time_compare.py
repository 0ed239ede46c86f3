"""Compares warpscope's gpu_time answers with the torch.profiler reference
written by bench/gpu/gpu_time_check.sh:  gpu_time_compare.py OUT MODE...
Per kernel name: warpscope's total (the kernel leaf's self time in
/api/v1/top) against the reference's summed durations over the same steps;
per call site: the share of GPU time under the site's Python frame against
the reference's share (its kernels mapped to sites by name)."""
import json
import sys

SITES = ("forward_matmul", "activation", "normalize")


def norm(name):
    return "".join(name.split())


def main():
    out, modes = sys.argv[1], sys.argv[2:]
    ref = json.load(open(f"{out}/reference.json"))
    ref_kernels = {norm(k): v for k, v in ref["kernels_ns"].items()}
    ref_total = sum(ref_kernels.values())
    ref_sites = ref["sites_ns"]
    print(f"reference: {ref['steps']} steps, {len(ref_kernels)} kernel names, {ref_total / 1e9:.4f} s GPU time")
    for mode in modes:
        top = json.load(open(f"{out}/top_{mode}.json"))
        ws = {norm(f["name"]): f["self"] for f in top["functions"] if f["kind"] == 4}
        ws_total = sum(ws.values())
        print(f"\n== {mode}: {len(ws)} kernel names, {ws_total / 1e9:.4f} s GPU time "
              f"(ratio to reference {ws_total / ref_total:.4f})")
        worst = 0.0
        for name, r in sorted(ref_kernels.items(), key=lambda kv: -kv[1]):
            w = ws.get(name, 0)
            ratio = w / r if r else 0
            share = r / ref_total
            if share >= 0.01:
                worst = max(worst, abs(ratio - 1))
            print(f"  {ratio:7.4f}  ref {r / 1e6:10.3f} ms  ws {w / 1e6:10.3f} ms  share {share * 100:5.1f}%  {name[:90]}")
        missing = [n for n in ws if n not in ref_kernels]
        for n in missing:
            print(f"  only in warpscope: {ws[n] / 1e6:.3f} ms {n[:100]}")
        print(f"  largest per-kernel error among kernels with >= 1% of the time: {worst * 100:.2f}%")
        # Shares per call site from the folded stacks.
        site_ns = {s: 0 for s in SITES}
        total = 0
        for line in open(f"{out}/collapsed_{mode}.txt"):
            stack, _, value = line.rstrip("\n").rpartition(" ")
            if not value.isdigit():
                continue
            v = int(value)
            total += v
            frames = stack.split(";")
            for s in SITES:
                if any(f == s or f.startswith(s + " ") for f in frames):
                    site_ns[s] += v
                    break
        for s in SITES:
            mine = site_ns[s] / total * 100 if total else 0
            truth = ref_sites.get(s, 0) / ref_total * 100
            print(f"  site {s:15s} warpscope {mine:6.2f}%  reference {truth:6.2f}%  diff {mine - truth:+.2f} points")
        run = json.load(open(f"{out}/run_{mode}.json"))
        print(f"  run: {run['seconds']:.3f} s for {run['steps']} steps (reference run {ref['seconds']:.3f} s)")


if __name__ == "__main__":
    main()
