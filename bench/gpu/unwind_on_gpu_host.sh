#!/usr/bin/env bash
# The .eh_frame unwinder on the H200 host (PyTorch installed): unwind-table build time and
# size for the big CUDA libraries, and the whole launch stack from a uprobe on
# cuLaunchKernel under a PyTorch loop, plus a CPU recording of the same loop.
#   bench/gpu/unwind_on_gpu_host.sh AGENT [PYTHON]
set -uo pipefail
AGENT=${1:?agent binary}
PY=${2:-/opt/torch/.venv/bin/python3}
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
site=$("$PY" -c 'import torch, os; print(os.path.dirname(torch.__file__))')
libs=("$site/lib/libtorch_cuda.so" "$site/lib/libtorch_cpu.so")
for l in "$site"/../nvidia/cu13/lib/libcublasLt.so.* /usr/local/nvidia/lib64/libcuda.so.1; do [[ -e $l ]] && libs+=("$l"); done
echo "== unwind tables"
"$AGENT" unwind-table "${libs[@]}"
echo "== launch stacks"
"$PY" "$here/launch_loop.py" 40 &
pid=$!
sleep 12   # CUDA init and the first launches
"$AGENT" probe-stack --pid "$pid" --uprobe /usr/local/nvidia/lib64/libcuda.so.1:cuLaunchKernel \
  --duration 5s --sample-every 50 --top 1 --unwind-table-mb 256
echo "== CPU profile of the same loop"
"$AGENT" record --pid "$pid" --duration 5s --output /tmp/gpu_loop.pb.gz --top 8
kill "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
true
