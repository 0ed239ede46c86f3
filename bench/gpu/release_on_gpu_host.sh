#!/usr/bin/env bash
# GPU host check of the release tarball (not a test):
#   bench/gpu/release_on_gpu_host.sh TARBALL [STEPS]
# On a GPU node, from the unpacked release (scripts/release.sh), as a node
# with the Kubernetes layout would run it:
#  1. the host's distribution and glibc; `warpscope-agent doctor` (NVML,
#     CUPTI, RmProfilingAdminOnly on real hardware);
#  2. warpscope-server and `warpscope-agent run --cuda-library-dir
#     /run/warpscope` from the release: the agent copies its injection library
#     next to the CUDA socket, and bench/gpu/train_sites.py runs STEPS steps
#     with CUDA_INJECTION64_PATH=/run/warpscope/libwarpscope_cuda.so and the
#     library's default socket, as a GPU pod would;
#  3. what came back: GPU-time top kernels, the GPU kernel table, NVML series
#     (NVML loaded by the release's own loader from the host's driver), the
#     agent's counters;
#  4. CUDA_INJECTION64_PATH naming a missing file (a pod started before the
#     agent copied its library): does CUDA still work?
# Writes $OUT/release_check.txt.
set -u
TARBALL=$(readlink -f "$1"); STEPS=${2:-3000}
OUT=${OUT:-/tmp}
PY=${PY:-/opt/torch/.venv/bin/python3}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
API=http://127.0.0.1:17070
R=/tmp/wsrel
exec > >(tee "$OUT/release_check.txt") 2>&1

echo "== host"; grep -E '^(PRETTY_NAME|VERSION_ID)=' /etc/os-release; ldd --version | head -1; uname -r
rm -rf $R /tmp/wsrel-data /tmp/wsrel-agent /run/warpscope; mkdir -p $R
tar xzf "$TARBALL" -C $R; D=$(echo $R/warpscope-*)
echo "== doctor"; "$D/bin/warpscope-agent" doctor; echo "doctor exit: $?"

"$D/bin/warpscope-server" --listen 127.0.0.1:17070 --data-dir /tmp/wsrel-data > $R/server.log 2>&1 &
S=$!
sleep 1
"$D/bin/warpscope-agent" run --server $API --state-dir /tmp/wsrel-agent --upload-interval 2s \
  --cuda-library-dir /run/warpscope --metrics-listen 127.0.0.1:19400 > $R/agent.log 2>&1 &
A=$!
sleep 4
echo "== agent start"; cat $R/agent.log; ls -la /run/warpscope
echo "== comm"; cat /proc/$A/comm /proc/$S/comm
echo "== train_sites.py with the copied library and the default socket"
CUDA_INJECTION64_PATH=/run/warpscope/libwarpscope_cuda.so timeout 300 "$PY" "$HERE/train_sites.py" plain "$STEPS" $R/run.json 2>&1 | tail -3
sleep 8
START=$("$PY" -c "import json;print(json.load(open('$R/run.json'))['start_ms'] // 1000 * 1000)")
END=$("$PY" -c "import json;print(json.load(open('$R/run.json'))['end_ms'] // 1000 * 1000 + 1000)")
echo "== gpu_time top kernels"
curl -s -m 20 "$API/api/v1/top?type=gpu_time&from=$START&to=$END&limit=5" | "$PY" -c '
import json,sys; d=json.load(sys.stdin)
for f in d["functions"][:5]: print(round(f["self"] / 1e6), "ms", f["name"][:70])
print("total", d.get("total"), d.get("unit"))'
echo "== gpu kernels (first 400 bytes)"; curl -s -m 20 "$API/api/v1/gpu/kernels?from=$START&to=$END" | head -c 400; echo
echo "== NVML series"; curl -s -m 20 "$API/api/v1/metric_names" | head -c 600; echo
echo "== agent counters"
curl -s -m 20 http://127.0.0.1:19400/metrics | grep -E 'gpu_kernels|gpu_launch|cuda_conn|dropped|gpu_readings|gpu_errors' | head -20
kill -TERM $A; timeout 30 tail --pid=$A -f /dev/null; tail -2 $R/agent.log
kill -TERM $S; timeout 30 tail --pid=$S -f /dev/null

echo "== CUDA_INJECTION64_PATH naming a missing file"
CUDA_INJECTION64_PATH=/run/absent/libwarpscope_cuda.so timeout 120 "$PY" -c '
import torch
x = torch.ones(1000, device="cuda")
print("cuda works:", float((x * 2).sum()))' 2>&1 | tail -3
echo "exit: ${PIPESTATUS[0]}"
