#!/usr/bin/env bash
# Python frames on the H200 host: the CPython unwinder under the host's Python 3.12
# (the one PyTorch runs on): the integration test's checks, the BPF cost per
# sample at 30 Python frames, and a PyTorch loop's cuLaunchKernel stacks and
# CPU profile with Python frames in place.
#   bench/gpu/python_on_gpu_host.sh AGENT PYTHON_BPF_TEST [PYTHON]
# Run from the repository root (needs tests/testprogs/python/workload.py).
set -uo pipefail
AGENT=${1:?agent binary}
TEST=${2:?python_bpf_test binary}
PY=${3:-/opt/torch/.venv/bin/python3}
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
echo "== $PY: $("$PY" -c 'import sys, platform; print(platform.python_version(), sys.executable)')"
echo "== python_bpf_test"
WS_TEST_PYTHONS=$PY WS_AGENT_BIN=$AGENT WS_PYTHON_WORKLOAD=$PWD/tests/testprogs/python/workload.py "$TEST"
echo "== BPF cost per sample"
WS_BENCH_NO_BUILD=1 "$here/../python_unwind_bench.sh" "${WS_ROUNDS:-3}" "${WS_SECS:-5}" "$PY"
echo "== launch stacks"
"$PY" "$here/launch_loop.py" 40 &
pid=$!
sleep 12   # CUDA init and the first launches
"$AGENT" probe-stack --pid "$pid" --uprobe /usr/local/nvidia/lib64/libcuda.so.1:cuLaunchKernel \
  --duration 5s --sample-every 50 --top 1 --unwind-table-mb 256
echo "== CPU profile of the same loop"
"$AGENT" record --pid "$pid" --duration 5s --output "${OUT:-/tmp}/gpu_loop.folded" --top 12
grep -c "" "${OUT:-/tmp}/gpu_loop.folded"
awk '{print $NF, $0}' "${OUT:-/tmp}/gpu_loop.folded" | sort -nr | head -3 | cut -d' ' -f2-
kill "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
true
