#!/usr/bin/env bash
# GPU host: what GPU time costs a launch-heavy PyTorch loop (not a test):
#   MODES="adaptive exact" bench/gpu/gpu_time_overhead.sh DIR [ROUNDS] [SECONDS] [LOOP]
# One real agent per mode in MODES runs throughout (`warpscope-agent run
# --gpu-time-mode MODE`, each on its own socket, all streaming to a real
# warpscope-server), and ROUNDS interleaved rounds (order rotating) of
# bench/gpu/launch_heavy.py (LOOP=launch) or a matmul loop (LOOP=matmul), one
# process per run, under: none (no injection library), each mode,
# torch_profiler. Prints iterations/s per run and the median ratio to "none";
# samples the agents' resident memory every 10 s. Writes to $OUT.
set -u
DIR=$(cd "$1" && pwd); ROUNDS=${2:-10}; SECS=${3:-2}; LOOP=${4:-launch}
MODES=${MODES:-adaptive exact}
OUT=${OUT:-/tmp}
PY=${PY:-/opt/torch/.venv/bin/python3}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
LIB=$DIR/lib/libwarpscope_cuda.so
WSLIB=LD_LIBRARY_PATH=$DIR/lib
CUDA_LIBS=/usr/local/cuda/lib64
API=http://127.0.0.1:17071

rm -rf /tmp/ws-oh-*
env $WSLIB "$DIR/bin/warpscope-server" --listen 127.0.0.1:17071 --data-dir /tmp/ws-oh-data > "$OUT/oh_server.log" 2>&1 &
S=$!
sleep 1
declare -A AGENT
for MODE in $MODES; do
  env $WSLIB "$DIR/bin/warpscope-agent" run --server $API --state-dir /tmp/ws-oh-$MODE --cuda-socket /tmp/ws-oh-$MODE.sock \
    --gpu-time-mode $MODE --no-gpu-metrics > "$OUT/oh_agent_$MODE.log" 2>&1 &
  AGENT[$MODE]=$!
done
sleep 3
( while sleep 10; do
    line="$(date +%s)"
    for MODE in $MODES; do line="$line $MODE $(awk '/VmRSS/ {print $2}' /proc/${AGENT[$MODE]}/status)"; done
    echo "$line"
  done ) > "$OUT/oh_rss.txt" &
M=$!

run() {  # config
  local env=()
  case $1 in
    none) ;;
    torch_profiler) env=(WS_TORCH_PROFILER=1) ;;
    *) env=(WARPSCOPE_AGENT_SOCKET=/tmp/ws-oh-$1.sock CUDA_INJECTION64_PATH=$LIB) ;;
  esac
  env "${env[@]}" LD_LIBRARY_PATH=$CUDA_LIBS timeout 60 "$PY" "$HERE/launch_heavy.py" "$SECS" $LOOP 2>>"$OUT/oh_stderr.txt" |
    awk -v c="$1" '/it_per_s/ {print c, $2}'
}
CONFIGS=(none $MODES torch_profiler)
for ((r = 0; r < ROUNDS; r++)); do
  for ((i = 0; i < ${#CONFIGS[@]}; i++)); do
    run "${CONFIGS[$(((i + r) % ${#CONFIGS[@]}))]}"
  done
done | tee "$OUT/oh_runs_$LOOP.txt"
kill $M
"$PY" - "$OUT/oh_runs_$LOOP.txt" <<'PYEOF'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    c, v = line.split()
    runs.setdefault(c, []).append(float(v))
base = statistics.median(runs["none"])
for c, v in runs.items():
    q = statistics.quantiles([x / base for x in v], n=4) if len(v) > 1 else [0, 0, 0]
    print(f"{c:15s} n={len(v):2d} median it/s {statistics.median(v):10.1f}  ratio {statistics.median(v) / base:.3f}  quartiles {q[0]:.3f}..{q[2]:.3f}")
PYEOF
for MODE in $MODES; do
  curl -s -m 5 "$API/api/v1/status" > /dev/null
  kill -INT ${AGENT[$MODE]}; timeout 30 tail --pid=${AGENT[$MODE]} -f /dev/null || kill -9 ${AGENT[$MODE]}
  tail -1 "$OUT/oh_agent_$MODE.log"
done
kill $S
cat "$OUT/oh_rss.txt" | sed -n '1p;$p'
