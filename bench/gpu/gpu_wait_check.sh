#!/usr/bin/env bash
# GPU host check of GPU wait through the real pipeline (not a test):
#   bench/gpu/gpu_wait_check.sh DIR [SECONDS] [MODES]
# DIR holds bin/{warpscope-agent,warpscope-server} and lib/libwarpscope_cuda.so
# (build here, carry over). For each of MODES (default "exact adaptive"), the
# real agent streams to a real warpscope-server while bench/gpu/item_loop.py
# runs SECONDS seconds with the injection library; then the server's gpu_wait
# answer for the measured range (collapsed stacks), the agent's counters and
# the loop's own timing of its waiting call sites and the range's insights go
# to $OUT, and
# bench/gpu/gpu_wait_compare.py compares them.
set -u
DIR=$(cd "$1" && pwd); SECONDS_RUN=${2:-30}; MODES=${3:-exact adaptive}
OUT=${OUT:-/tmp}
PY=${PY:-/opt/torch/.venv/bin/python3}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$HERE/pipeline.sh"
for MODE in $MODES; do
  start_pipeline "$DIR" 17171 "gw-$MODE" --gpu-time-mode "$MODE" --metrics-listen 127.0.0.1:19401
  WARPSCOPE_AGENT_SOCKET=$SOCK CUDA_INJECTION64_PATH=$DIR/lib/libwarpscope_cuda.so \
    timeout 300 "$PY" "$HERE/item_loop.py" "$SECONDS_RUN" "$OUT/run_$MODE.json" 2>&1 | tail -3
  sleep 8  # the wait joiner's grace period, then an upload window
  START=$("$PY" -c "import json;print(json.load(open('$OUT/run_$MODE.json'))['start_ms'] // 1000 * 1000)")
  END=$("$PY" -c "import json;print(json.load(open('$OUT/run_$MODE.json'))['end_ms'] // 1000 * 1000 + 1000)")
  curl -s -m 20 "$API/api/v1/profile?type=gpu_wait&from=$START&to=$END&format=collapsed" > "$OUT/gpu_wait_$MODE.txt"
  curl -s -m 20 "$API/api/v1/profile?type=gpu_time&from=$START&to=$END&format=collapsed" > "$OUT/gpu_time_$MODE.txt"
  curl -s -m 20 "$API/api/v1/insights?from=$START&to=$END" > "$OUT/insights_$MODE.json"
  curl -s -m 20 http://127.0.0.1:19401/metrics | grep -E 'gpu_wait|cuda_lib_wait' > "$OUT/metrics_$MODE.txt"
  stop_pipeline
  mv "$OUT/agent.log" "$OUT/agent_$MODE.log"
done
"$PY" "$HERE/gpu_wait_compare.py" "$OUT" $MODES | tee "$OUT/compare.txt" || true
