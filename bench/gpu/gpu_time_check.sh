#!/usr/bin/env bash
# GPU host check of GPU time through the real pipeline (not a test):
#   bench/gpu/gpu_time_check.sh DIR [STEPS] [MODES]
# DIR holds bin/{warpscope-agent,warpscope-server} and lib/libwarpscope_cuda.so
# (build here, carry over). For each of MODES (default "exact duty"), the real
# agent (`warpscope-agent run`, that --gpu-time-mode) streams to a real
# warpscope-server while bench/gpu/train_sites.py runs STEPS steps with the
# injection library; then the same steps run under torch.profiler as the
# reference. Writes to $OUT: per mode the server's gpu_time answers for the
# measured steps' range (collapsed stacks, top functions, JSON tree), the
# agent's Prometheus counters and RSS; the reference JSON.
# bench/gpu/gpu_time_compare.py $OUT compares them. AGENT_FLAGS: more agent
# flags (-v logs each recording window of the adaptive mode).
set -u
DIR=$(cd "$1" && pwd); STEPS=${2:-300}; MODES=${3:-exact duty}
OUT=${OUT:-/tmp}
PY=${PY:-/opt/torch/.venv/bin/python3}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
LIB=$DIR/lib/libwarpscope_cuda.so
# Our binaries find their Debian libraries in DIR/lib; nothing else should (curl).
WSLIB=LD_LIBRARY_PATH=$DIR/lib
CUDA_LIBS=/usr/local/cuda/lib64
SOCK=/tmp/ws-gpu-time/cuda.sock  # the agent refuses a socket directly in world-writable /tmp
API=http://127.0.0.1:17070

rm -rf /tmp/ws-gt-data
env $WSLIB "$DIR/bin/warpscope-server" --listen 127.0.0.1:17070 --data-dir /tmp/ws-gt-data > "$OUT/server.log" 2>&1 &
S=$!
sleep 1

for MODE in $MODES; do
  rm -rf /tmp/ws-gt-agent
  env $WSLIB "$DIR/bin/warpscope-agent" run --server $API --state-dir /tmp/ws-gt-agent --upload-interval 2s \
    --cuda-socket $SOCK --gpu-time-mode "$MODE" --gpu-trace-per-sec 1000000 \
    --metrics-listen 127.0.0.1:19400 ${AGENT_FLAGS:-} > "$OUT/agent_$MODE.log" 2>&1 &
  A=$!
  sleep 3
  WARPSCOPE_AGENT_SOCKET=$SOCK CUDA_INJECTION64_PATH=$LIB LD_LIBRARY_PATH=$CUDA_LIBS:$DIR/lib \
    timeout 200 "$PY" "$HERE/train_sites.py" plain "$STEPS" "$OUT/run_$MODE.json" 2>&1 | tail -3
  sleep 7  # the join's grace period, then an upload window
  START=$("$PY" -c "import json;print(json.load(open('$OUT/run_$MODE.json'))['start_ms'] // 1000 * 1000)")
  END=$("$PY" -c "import json;print(json.load(open('$OUT/run_$MODE.json'))['end_ms'] // 1000 * 1000 + 1000)")
  Q="type=gpu_time&from=$START&to=$END"
  curl -s -m 20 "$API/api/v1/profile?$Q&format=collapsed" > "$OUT/collapsed_$MODE.txt"
  curl -s -m 20 "$API/api/v1/top?$Q&limit=0" > "$OUT/top_$MODE.json"
  curl -s -m 20 "$API/api/v1/profile?$Q" > "$OUT/tree_$MODE.json"
  curl -s -m 20 "$API/api/v1/gpu/kernels?from=$START&to=$END" > "$OUT/kernels_$MODE.json"
  curl -s -m 20 http://127.0.0.1:19400/metrics > "$OUT/metrics_$MODE.txt"
  grep -E "^VmHWM|^VmRSS" /proc/$A/status > "$OUT/agent_rss_$MODE.txt"
  kill -INT $A; timeout 30 tail --pid=$A -f /dev/null || kill -9 $A
  tail -3 "$OUT/agent_$MODE.log"
  grep -E 'gpu_kernels|gpu_launch|gpu_probe|gpu_trace|cuda_lib|cuda_conn' "$OUT/metrics_$MODE.txt" | head -30
done
kill $S; timeout 30 tail --pid=$S -f /dev/null || kill -9 $S

LD_LIBRARY_PATH=$CUDA_LIBS timeout 200 "$PY" "$HERE/train_sites.py" torch_profiler "$STEPS" "$OUT/reference.json" 2>&1 | tail -3
rm -f "$OUT/reference.json.trace.json"
"$PY" "$HERE/gpu_time_compare.py" "$OUT" $MODES | tee "$OUT/compare.txt" || true
# Few files come back from the GPU host: one archive.
(cd "$OUT" && tar czf gpu_time_check.tgz --exclude gpu_time_check.tgz -- * && find . -type f ! -name '*.tgz' ! -name compare.txt -delete)
