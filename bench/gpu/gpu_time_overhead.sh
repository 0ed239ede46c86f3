#!/usr/bin/env bash
# GPU host: what GPU time costs a launch-heavy PyTorch loop (not a test):
#   MODES="adaptive exact" bench/gpu/gpu_time_overhead.sh DIR [ROUNDS] [SECONDS] [LOOP]
# One real agent per mode in MODES runs throughout (`warpscope-agent run
# --gpu-time-mode MODE`; mode "pc" is adaptive with `--gpu-pc-sampling on`,
# "exact_pc" exact with it; each on its own socket, all streaming to a real
# warpscope-server), and ROUNDS interleaved rounds (order rotating) of
# bench/gpu/launch_heavy.py (LOOP=launch) or a matmul loop (LOOP=matmul), or
# both in each process (LOOP=launch+matmul), one process per run, under: none
# (no injection library), each mode, torch_profiler (EXTRA="" leaves it out).
# Prints iterations/s per run and the median ratio to "none" per loop;
# samples the agents' resident memory every 10 s.
# Writes to $OUT. AGENT_FLAGS adds agent flags (-v logs each recording window).
set -u
DIR=$(cd "$1" && pwd); ROUNDS=${2:-10}; SECS=${3:-2}; LOOP=${4:-launch}
MODES=${MODES:-adaptive exact}
OUT=${OUT:-/tmp}
mkdir -p "$OUT"
PY=${PY:-/opt/torch/.venv/bin/python3}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
LIB=$DIR/lib/libwarpscope_cuda.so
WSLIB=LD_LIBRARY_PATH=$DIR/lib
CUDA_LIBS=/usr/local/cuda/lib64
API=http://127.0.0.1:17071

# Agents across calls (a device call's processes end with it unless they
# start a new session): KEEP_AGENTS=1 leaves the server, the agents and the
# memory sampler running (setsid) for a later call, which reuses them when
# they are still alive and stops them at its end (after MIN_AGENT_SECS of
# agent uptime, if set: a long memory run spanning calls).
KEEP=${KEEP_AGENTS:-0}
mode_flags() {
  case $1 in
    pc) echo --gpu-time-mode adaptive --gpu-pc-sampling on ;;
    exact_pc) echo --gpu-time-mode exact --gpu-pc-sampling on ;;
    *) echo --gpu-time-mode "$1" ;;
  esac
}
STATE=/tmp/ws-oh-state
bg() { if [[ $KEEP == 1 ]]; then setsid "$@" & else "$@" & fi; }
declare -A AGENT
if [[ -f $STATE/server.pid ]] && kill -0 "$(cat $STATE/server.pid)" 2>/dev/null; then
  S=$(cat $STATE/server.pid)
  for MODE in $MODES; do AGENT[$MODE]=$(cat $STATE/agent_$MODE.pid); done
  M=$(cat $STATE/rss.pid)
  echo "reusing the running server and agents (up $(( $(date +%s) - $(cat $STATE/started) )) s)"
else
  rm -rf /tmp/ws-oh-*
  mkdir -p $STATE
  date +%s > $STATE/started
  bg env $WSLIB "$DIR/bin/warpscope-server" --listen 127.0.0.1:17071 --data-dir /tmp/ws-oh-data > $STATE/server.log 2>&1
  S=$!
  echo $S > $STATE/server.pid
  sleep 1
  for MODE in $MODES; do
    bg env $WSLIB "$DIR/bin/warpscope-agent" run --server $API --state-dir /tmp/ws-oh-$MODE \
      --cuda-socket /tmp/ws-oh-sock-$MODE/cuda.sock $(mode_flags $MODE) --no-gpu-metrics ${AGENT_FLAGS:-} > $STATE/agent_$MODE.log 2>&1
    AGENT[$MODE]=$!
    echo ${AGENT[$MODE]} > $STATE/agent_$MODE.pid
  done
  sleep 3
  # Resident memory of each agent every 10 s (seconds since start, kB).
  start=$(cat $STATE/started)
  bg bash -c "while sleep 10; do line=\$(( \$(date +%s) - $start )); for m in $MODES; do
      line=\"\$line \$m \$(awk '/VmRSS/ {print \$2}' /proc/\$(cat $STATE/agent_\$m.pid)/status)\"; done
      echo \"\$line\"; done" > $STATE/rss.txt 2>/dev/null
  M=$!
  echo $M > $STATE/rss.pid
fi

run() {  # config
  local env=()
  case $1 in
    none) ;;
    torch_profiler) env=(WS_TORCH_PROFILER=1) ;;
    *) env=(WARPSCOPE_AGENT_SOCKET=/tmp/ws-oh-sock-$1/cuda.sock CUDA_INJECTION64_PATH=$LIB) ;;
  esac
  env "${env[@]}" LD_LIBRARY_PATH=$CUDA_LIBS timeout 60 "$PY" "$HERE/launch_heavy.py" "$SECS" $LOOP 2>>"$OUT/oh_stderr.txt" |
    awk -v c="$1" '/it_per_s/ {print ($3 == "" ? c : c "/" $3), $2}'
}
CONFIGS=(none $MODES ${EXTRA-torch_profiler})
for ((r = 0; r < ROUNDS; r++)); do
  for ((i = 0; i < ${#CONFIGS[@]}; i++)); do
    run "${CONFIGS[$(((i + r) % ${#CONFIGS[@]}))]}"
  done
done | tee "$OUT/oh_runs.txt"
"$PY" - "$OUT/oh_runs.txt" <<'PYEOF'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    c, v = line.split()
    runs.setdefault(c, []).append(float(v))
for c, v in sorted(runs.items(), key=lambda x: (x[0].partition("/")[2], x[0] != "none" and not x[0].startswith("none/"))):
    base = statistics.median(runs["none" + c[c.index("/"):] if "/" in c else "none"])
    q = statistics.quantiles([x / base for x in v], n=4) if len(v) > 1 else [0, 0, 0]
    print(f"{c:15s} n={len(v):2d} median it/s {statistics.median(v):10.1f}  ratio {statistics.median(v) / base:.3f}  quartiles {q[0]:.3f}..{q[2]:.3f}")
PYEOF
cp $STATE/rss.txt "$OUT/oh_rss.txt"
if [[ $KEEP == 1 ]]; then
  echo "left running for a later call: server $S, agents ${AGENT[*]}"
  exit 0
fi
if [[ -n ${MIN_AGENT_SECS:-} ]]; then
  left=$(( $(cat $STATE/started) + MIN_AGENT_SECS - $(date +%s) ))
  (( left > 0 )) && { echo "waiting $left s for the memory run"; sleep $left; }
fi
kill $M
for MODE in $MODES; do
  curl -s -m 5 "$API/api/v1/status" > /dev/null
  kill -INT ${AGENT[$MODE]}
  for _ in $(seq 60); do kill -0 ${AGENT[$MODE]} 2>/dev/null || break; sleep 0.5; done
  kill -9 ${AGENT[$MODE]} 2>/dev/null
  tail -1 $STATE/agent_$MODE.log
done
kill $S
cp $STATE/*.log $STATE/rss.txt "$OUT/" 2>/dev/null
sed -n '1p;$p' $STATE/rss.txt
