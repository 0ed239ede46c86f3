"""Compares the gpu_wait profile with the loop's own timing of its waiting
call sites (bench/gpu/gpu_wait_check.sh):
  gpu_wait_compare.py OUT MODE...
Per mode: the gpu_wait time under each call site (a stack through the
site's Python function) over the time Python measured around the call, and
the kernels the site waited for (the children of the CUDA call), largest
first."""
import collections
import json
import sys


def main():
    out, modes = sys.argv[1], sys.argv[2:]
    for mode in modes:
        ref = json.load(open(f"{out}/run_{mode}.json"))
        # Kernel names: the leaves of the same range's gpu_time profile.
        gpu_kernels = {line.rstrip("\n").rpartition(" ")[0].split(";")[-1] for line in open(f"{out}/gpu_time_{mode}.txt")}
        sites = collections.Counter()
        kernels = collections.defaultdict(collections.Counter)
        total = 0
        for line in open(f"{out}/gpu_wait_{mode}.txt"):
            stack, _, value = line.rstrip("\n").rpartition(" ")
            if not stack:
                continue
            ns = int(value)
            total += ns
            frames = stack.split(";")
            site = next((s for s in ("read_loss", "checkpoint") if any(f.startswith(s) for f in frames)), "other")
            sites[site] += ns
            leaf = frames[-1]
            waited = leaf if leaf in gpu_kernels or leaf.startswith("[mem") else "[no GPU work recorded: the call itself]"
            kernels[site][waited] += ns
        print(f"== {mode}: {ref['steps']} steps, gpu_wait {total / 1e9:.3f} s in all")
        for site in ("read_loss", "checkpoint", "other"):
            want = ref["spent_ns"].get(site)
            ratio = f"{sites[site] / want:.4f} of the {want / 1e9:.3f} s Python measured" if want else ""
            print(f"  {site:<11} {sites[site] / 1e9:8.3f} s  {ratio}")
            for name, ns in kernels[site].most_common(4):
                print(f"      {ns / max(sites[site], 1):6.1%}  {name[:100]}")


if __name__ == "__main__":
    main()
