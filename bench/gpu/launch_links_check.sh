#!/usr/bin/env bash
# GPU host check of the launch calls on kernel records (not a test):
#   bench/gpu/launch_links_check.sh DIR [STEPS]
# DIR holds bin/{warpscope-agent,warpscope-server} and lib/libwarpscope_cuda.so
# (build here, carry over). The real agent (`warpscope-agent run`, exact
# mode) streams to a real warpscope-server while bench/gpu/train_sites.py
# runs STEPS steps with the injection library; then the same steps run under
# torch.profiler (CUDA activities: its runtime API records and flows are the
# reference). Writes to $OUT the server's /api/v1/gpu/trace and trace.json
# for two seconds in the middle of the steps, the agent's counters and the
# reference trace; bench/gpu/launch_links_compare.py $OUT compares them.
set -u
DIR=$(cd "$1" && pwd); STEPS=${2:-3000}
OUT=${OUT:-/tmp}
PY=${PY:-/opt/torch/.venv/bin/python3}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
LIB=$DIR/lib/libwarpscope_cuda.so
CUDA_LIBS=/usr/local/cuda/lib64
. "$HERE/pipeline.sh"
start_pipeline "$DIR" 17071 links --gpu-trace-per-sec 1000000 --metrics-listen 127.0.0.1:19401
WARPSCOPE_AGENT_SOCKET=$SOCK CUDA_INJECTION64_PATH=$LIB LD_LIBRARY_PATH=$CUDA_LIBS:$DIR/lib \
  timeout 200 "$PY" "$HERE/train_sites.py" plain "$STEPS" "$OUT/run.json" 2>&1 | tail -3
sleep 7  # the join's grace period, then an upload window
MID=$("$PY" -c "import json;r=json.load(open('$OUT/run.json'));print((r['start_ms']+r['end_ms'])//2)")
Q="from=$((MID - 1000))&to=$((MID + 1000))"
curl -s -m 30 "$API/api/v1/gpu/trace?$Q" > "$OUT/trace.json"
curl -s -m 30 "$API/api/v1/gpu/trace.json?$Q" > "$OUT/chrome_trace.json"
curl -s -m 20 http://127.0.0.1:19401/metrics | grep -E 'gpu_trace|gpu_kernels|cuda_lib' > "$OUT/metrics.txt"
stop_pipeline
LD_LIBRARY_PATH=$CUDA_LIBS timeout 200 "$PY" "$HERE/train_sites.py" torch_profiler "$STEPS" "$OUT/reference.json" 2>&1 | tail -3
"$PY" "$HERE/launch_links_compare.py" "$OUT" | tee "$OUT/compare.txt"
(cd "$OUT" && tar czf launch_links_check.tgz --exclude launch_links_check.tgz -- * && find . -type f ! -name '*.tgz' ! -name compare.txt -delete)
