#!/usr/bin/env bash
# GPU host: real-framework validation of the whole GPU pipeline (not a test):
#   OUT=/tmp/rs bench/gpu/real_suite.sh DIR
# DIR holds bin/{warpscope-agent,warpscope-server} and lib/libwarpscope_cuda.so
# (build elsewhere, carry over); bin/graph_replay too if built beside them
# (bench/gpu/build_graph_replay.sh DIR/bin), else it is built here when nvcc
# is found, else the C++ graph workload is skipped.
#
# One warpscope-server (embedded store) and one `warpscope-agent run` at
# default settings (no mode flags; uploads every 2 s, metrics on loopback)
# profile every workload, each started with CUDA_INJECTION64_PATH:
#   crash       b real_compile.py (torch.compile reduce-overhead), c real_graph.py
#               (torch.cuda.CUDAGraph) and c graph_replay (C++, graph exec
#               updates), REPEATS runs each, CRASH_PAR at a time, the three side
#               by side with the functional workloads: crashes, exit codes,
#               signals, CUDA errors in the output
#   functional  d real_jax.py, e real_loader.py (DataLoader, 4 forked workers),
#               f real_threads.py (two threads, two streams), and g's count
#               without injection (the reference for "profiler")
#   accuracy    a real_train.py (GPT-2-like, bf16, fused AdamW) injected, the
#               same under torch.profiler in a separate non-injected process, and
#               once more injected under a second agent with --gpu-time-mode exact
#   profiler    g real_profiler_inside.py: torch.profiler inside an injected
#               process (its kernel count against the non-injected run's; does
#               warpscope's GPU time resume after the profiler session)
#   insights    h real_starved.py (slow_cpu_preprocess: steady, then 5 s stalls)
#               and i real_busy_sync.py (large matmuls, synchronize every step)
#   overhead    launch_heavy.py launch+matmul, OH_ROUNDS interleaved rounds
#               injected vs not (order rotating): median ratio per loop
# Then the server's answers and the agents' counters are collected
# (real_suite_summary.py collect) and summarised as markdown
# (real_suite_summary.py report).
#
# Writes to $OUT (default /tmp/ws-real-out): real_suite.log (progress, failing
# runs' output, the agents' and server's last lines), results.json, summary.md,
# raw.tgz (every run's output, the server's answers). Work files in $WORK.
#
# Estimated wall time at the defaults (not yet timed on a GPU host): start 10 s
# (plus ~20 s to build graph_replay), crash+functional ~130 s, accuracy ~110 s,
# profiler ~40 s, insights ~85 s, overhead ~95 s, collecting ~30 s: ~8.5 min.
# A subset: PARTS="accuracy profiler" (the others skipped), or fewer runs and
# shorter ones through the knobs below.
#
# Knobs (environment):
#   PARTS="crash functional accuracy profiler insights overhead"  the parts to run
#   SUITE_REPEAT=1     the parts, this many times over (one server and agent)
#   REPEATS=20 CRASH_PAR=4 CRASH_SECS=3 COMPILE_SECS=2   crash-prone runs
#   TRAIN_SECS=30 TRAIN_EXACT_SECS=12 REF_STEPS=30 EXACT=1   accuracy
#   JAX_STEPS=300 LOADER_SECS=15 THREADS_SECS=10   functional
#   PROF_STEPS=1200   profiler (steps before and under the profiler; 3x after)
#   STARVED_STEADY=15 STARVED_PERIODIC=30 BUSY_SECS=25   insights
#   OH_ROUNDS=4 OH_SECS=3   overhead
#   BUDGET_S=510       a part that would end past this many seconds (by its estimate) is
#                      skipped, so the whole command, collecting included, ends within ~9 min
#   AGENT_FLAGS=       more flags for the default agent
#   SEGV_REPORT=       bench/gpu/segv_report.so (built): preloaded into every workload,
#                      so that a death by signal leaves a native backtrace in its log
#   PY=/opt/torch/.venv/bin/python3
set -u
KNOBS=$(env | grep -E '^(PARTS|SUITE_REPEAT|REPEATS|CRASH_PAR|CRASH_SECS|COMPILE_SECS|TRAIN_SECS|TRAIN_EXACT_SECS|REF_STEPS|EXACT|JAX_STEPS|LOADER_SECS|THREADS_SECS|PROF_STEPS|STARVED_STEADY|STARVED_PERIODIC|BUSY_SECS|OH_ROUNDS|OH_SECS|BUDGET_S|AGENT_FLAGS)=' | sort | tr '\n' ' ')
DIR=$(cd "${1:?usage: real_suite.sh DIR}" && pwd)
OUT=${OUT:-/tmp/ws-real-out}
WORK=${WORK:-/tmp/ws-real}
PY=${PY:-/opt/torch/.venv/bin/python3}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
LIB=$DIR/lib/libwarpscope_cuda.so
PARTS=${PARTS:-crash functional accuracy profiler insights overhead}
SUITE_REPEAT=${SUITE_REPEAT:-1}
REPEATS=${REPEATS:-20} CRASH_PAR=${CRASH_PAR:-4} CRASH_SECS=${CRASH_SECS:-3} COMPILE_SECS=${COMPILE_SECS:-2}
TRAIN_SECS=${TRAIN_SECS:-30} TRAIN_EXACT_SECS=${TRAIN_EXACT_SECS:-12} REF_STEPS=${REF_STEPS:-30} EXACT=${EXACT:-1}
JAX_STEPS=${JAX_STEPS:-300} LOADER_SECS=${LOADER_SECS:-15} THREADS_SECS=${THREADS_SECS:-10}
PROF_STEPS=${PROF_STEPS:-1200}
STARVED_STEADY=${STARVED_STEADY:-15} STARVED_PERIODIC=${STARVED_PERIODIC:-30} BUSY_SECS=${BUSY_SECS:-25}
OH_ROUNDS=${OH_ROUNDS:-4} OH_SECS=${OH_SECS:-3}
BUDGET_S=${BUDGET_S:-510}
PORT=17180 METRICS=127.0.0.1:19480 METRICS_EXACT=127.0.0.1:19481
API=http://127.0.0.1:$PORT
SOCK=/tmp/ws-real-sock/cuda.sock  # the agent refuses a socket directly in world-writable /tmp
SOCK_EXACT=/tmp/ws-real-sock-exact/cuda.sock
T0=$(date +%s)

rm -rf "$WORK" /tmp/ws-real-data /tmp/ws-real-agent /tmp/ws-real-agent-exact
mkdir -p "$OUT" "$WORK/logs"
rm -f "$OUT/real_suite.log" "$OUT/results.json" "$OUT/summary.md" "$OUT/raw.tgz"
RUNS=$WORK/runs.tsv
: > "$RUNS"
exec > >(tee -a "$OUT/real_suite.log") 2>&1
TEE=$!
say() { echo "[$(( $(date +%s) - T0 ))s] $*"; }

# Fits the part (its estimated seconds) before BUDGET_S? Otherwise it is skipped, and said so.
fits() {
  local left=$(( BUDGET_S - ($(date +%s) - T0) ))
  if (( $1 > left )); then
    say "SKIPPED $2: needs ~$1 s, $left s left of BUDGET_S=$BUDGET_S"
    printf 'skipped\t%s\t-\t-\t-\t-\n' "$2" >> "$RUNS"
    return 1
  fi
}

# run_one PART NAME CONFIG INDEX LIMIT_S CMD...: CONFIG none (no injection
# library), adaptive (the default agent) or exact (the second agent). One
# line per run in $RUNS: part, name, config, exit status, seconds, log, round.
run_one() {
  local part=$1 name=$2 config=$3 idx=$4 limit=$5
  shift 5
  local log=$WORK/logs/$name.$config.r$ROUND.$idx.log env=() t0 rc
  case $config in
    adaptive) env=("WARPSCOPE_AGENT_SOCKET=$SOCK" "CUDA_INJECTION64_PATH=$LIB") ;;
    exact) env=("WARPSCOPE_AGENT_SOCKET=$SOCK_EXACT" "CUDA_INJECTION64_PATH=$LIB") ;;
    none) env=(WS_REAL_NOT_INJECTED=1) ;;
  esac
  t0=$(date +%s%3N)
  [[ -n ${SEGV_REPORT:-} ]] && env+=("LD_PRELOAD=$SEGV_REPORT")
  env "${env[@]}" PYTHONFAULTHANDLER=1 timeout -k 10 "$limit" "$@" > "$log" 2>&1 < /dev/null
  rc=$?
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$part" "$name" "$config" "$rc" \
    "$(( $(date +%s%3N) - t0 ))" "$log" "$ROUND" >> "$RUNS"
  (( rc == 0 )) || say "  $name/$config #$idx: exit $rc ($(tail -c 300 "$log" | tr '\n' ' ' | tail -c 200))"
  return 0
}

# repeat PART NAME CONFIG FIRST LAST PAR LIMIT CMD...: runs FIRST..LAST, PAR at a time.
repeat() {
  local part=$1 name=$2 config=$3 first=$4 last=$5 par=$6 limit=$7 i
  shift 7
  for ((i = first; i <= last; i++)); do
    while (( $(jobs -rp | wc -l) >= par )); do wait -n; done
    run_one "$part" "$name" "$config" "$i" "$limit" "$@" &
  done
  wait
}

start_agent() {  # NAME SOCKET METRICS FLAGS...
  local name=$1 sock=$2 metrics=$3
  shift 3
  LD_LIBRARY_PATH=$DIR/lib "$DIR/bin/warpscope-agent" run --server "$API" --state-dir "/tmp/ws-real-$name" \
    --upload-interval 2s --cuda-socket "$sock" --metrics-listen "$metrics" "$@" > "$WORK/$name.log" 2>&1 &
  echo $!
}
stop() {  # PID: SIGINT, then up to 30 s for it to finish its uploads
  kill -INT "$1" 2>/dev/null
  timeout 30 tail --pid="$1" -f /dev/null || kill -9 "$1" 2>/dev/null
}

# The C++ graph workload: carried in, built before, or built now.
GRAPH_BIN=${GRAPH_REPLAY:-}
for cand in "$DIR/bin/graph_replay" "$HERE/.build/graph_replay"; do
  [[ -z $GRAPH_BIN && -x $cand ]] && GRAPH_BIN=$cand
done
if [[ -z $GRAPH_BIN && -x ${NVCC:-/usr/local/cuda/bin/nvcc} ]]; then
  say "building graph_replay"
  "$HERE/build_graph_replay.sh" > "$WORK/build_graph_replay.log" 2>&1 && GRAPH_BIN=$HERE/.build/graph_replay
  [[ -n $GRAPH_BIN ]] || tail -5 "$WORK/build_graph_replay.log"
fi
[[ -n $GRAPH_BIN ]] || say "no graph_replay binary and no nvcc: the C++ graph workload is skipped"

{
  echo "date=$(date -u +%Y-%m-%d)"
  echo "gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1 | sed 's/, / driver /')"
  echo "software=$("$PY" -c '
import importlib.metadata as m, platform
def v(p):
    try:
        return m.version(p)
    except m.PackageNotFoundError:
        return "missing"
print(f"Python {platform.python_version()}, " + ", ".join(f"{p} {v(p)}" for p in ("torch", "transformers", "jax", "triton")))' 2>&1 | tail -1)"
  echo "command=${KNOBS}bench/gpu/real_suite.sh DIR"
} > "$WORK/info.env"
say "host: $(grep -E '^(gpu|software)=' "$WORK/info.env" | cut -d= -f2- | tr '\n' ' ')"
# Whatever ends the script (a failed start, a signal) ends the agents and the server with it.
SERVER='' AGENT=''
cleanup() {
  local p
  for p in $AGENT ${EXACT_AGENT:-} $SERVER; do kill -0 "$p" 2>/dev/null && kill -9 "$p"; done
  return 0
}
trap cleanup EXIT
LD_LIBRARY_PATH=$DIR/lib "$DIR/bin/warpscope-server" --listen "127.0.0.1:$PORT" --data-dir /tmp/ws-real-data \
  > "$WORK/server.log" 2>&1 &
SERVER=$!
sleep 1
# shellcheck disable=SC2086  # AGENT_FLAGS is a list of flags
AGENT=$(start_agent agent "$SOCK" "$METRICS" ${AGENT_FLAGS:-})
# The default agent's memory every 2 s, and its /metrics at each new high,
# for the memory section of the summary (agent_rss_sampler.sh).
"$HERE/agent_rss_sampler.sh" "$AGENT" "$METRICS" "$WORK" "$T0" &
RSS_SAMPLER=$!
sleep 4
for who in "server $SERVER" "agent $AGENT"; do
  kill -0 "${who#* }" 2>/dev/null && continue
  say "the ${who% *} did not start:"; tail -20 "$WORK/${who% *}.log"
  exit 1
done
say "server $SERVER, agent $AGENT (default settings), parts: $PARTS, $SUITE_REPEAT time(s)"

part_crash_functional() {
  local crash=0 functional=0
  [[ " $PARTS " == *" crash "* ]] && crash=1
  [[ " $PARTS " == *" functional "* ]] && functional=1
  (( crash || functional )) || return 0
  fits 150 "crash+functional r$ROUND" || return 0
  say "== crash-prone: $REPEATS runs each of compile, graph_py, graph_cpp ($CRASH_PAR at a time);" \
    "functional: jax, loader, threads, profiler_inside (not injected); side by side"
  # The server is a job of this shell too: wait for these jobs by their ids.
  local pids=()
  if (( crash )); then
    if [[ -n $GRAPH_BIN ]]; then
      repeat crash graph_cpp adaptive 1 "$REPEATS" "$CRASH_PAR" 40 "$GRAPH_BIN" "$CRASH_SECS" 100 &
      pids+=($!)
    fi
    repeat crash graph_py adaptive 1 "$REPEATS" "$CRASH_PAR" 60 "$PY" "$HERE/real_graph.py" "$CRASH_SECS" &
    pids+=($!)
    {
      # The first compiles into inductor's cache alone; the others read it.
      run_one crash compile adaptive 1 180 "$PY" "$HERE/real_compile.py" "$COMPILE_SECS"
      repeat crash compile adaptive 2 "$REPEATS" "$CRASH_PAR" 90 "$PY" "$HERE/real_compile.py" "$COMPILE_SECS"
    } &
    pids+=($!)
  fi
  if (( functional )); then
    run_one functional jax adaptive 1 120 "$PY" "$HERE/real_jax.py" "$JAX_STEPS" &
    pids+=($!)
    run_one functional loader adaptive 1 90 "$PY" "$HERE/real_loader.py" "$LOADER_SECS" &
    pids+=($!)
    run_one functional threads adaptive 1 90 "$PY" "$HERE/real_threads.py" "$THREADS_SECS" &
    pids+=($!)
    # Only the profiled phase's count is compared: no "after" phase without the library.
    run_one profiler profiler_inside none 1 150 "$PY" "$HERE/real_profiler_inside.py" "$PROF_STEPS" 0 &
    pids+=($!)
  fi
  wait "${pids[@]}"
  say "   done"
}

part_accuracy() {
  [[ " $PARTS " == *" accuracy "* ]] || return 0
  fits $(( TRAIN_SECS + 60 )) "accuracy r$ROUND" || return 0
  say "== accuracy: real_train.py $TRAIN_SECS s injected (adaptive), then the torch.profiler reference"
  run_one accuracy train adaptive 1 $(( TRAIN_SECS + 60 )) "$PY" "$HERE/real_train.py" plain "$TRAIN_SECS"
  run_one accuracy train_reference none 1 120 "$PY" "$HERE/real_train.py" torch_profiler "$REF_STEPS"
  [[ $EXACT == 1 ]] || return 0
  fits $(( TRAIN_EXACT_SECS + 45 )) "accuracy exact r$ROUND" || return 0
  say "   real_train.py $TRAIN_EXACT_SECS s under a second agent, --gpu-time-mode exact"
  # shellcheck disable=SC2086
  EXACT_AGENT=$(start_agent agent-exact "$SOCK_EXACT" "$METRICS_EXACT" --gpu-time-mode exact --no-gpu-metrics ${AGENT_FLAGS:-})
  sleep 3
  run_one accuracy train exact 1 $(( TRAIN_EXACT_SECS + 60 )) "$PY" "$HERE/real_train.py" plain "$TRAIN_EXACT_SECS"
  sleep 7  # the join's grace period, then an upload window
  curl -s -m 10 "http://$METRICS_EXACT/metrics" > "$WORK/metrics_exact.r$ROUND.txt"
  stop "$EXACT_AGENT"
  tail -2 "$WORK/agent-exact.log"
}

part_profiler() {
  [[ " $PARTS " == *" profiler "* ]] || return 0
  fits 45 "profiler r$ROUND" || return 0
  say "== profiler: real_profiler_inside.py $PROF_STEPS steps injected (torch.profiler inside)"
  local ref=
  if ! grep -q $'\tprofiler_inside\tnone\t' "$RUNS"; then  # the reference count, when functional did not run it
    run_one profiler profiler_inside none 1 150 "$PY" "$HERE/real_profiler_inside.py" "$PROF_STEPS" 0 &
    ref=$!
  fi
  run_one profiler profiler_inside adaptive 1 120 "$PY" "$HERE/real_profiler_inside.py" "$PROF_STEPS"
  [[ -z $ref ]] || wait "$ref"
}

part_insights() {
  [[ " $PARTS " == *" insights "* ]] || return 0
  fits $(( STARVED_STEADY + STARVED_PERIODIC + BUSY_SECS + 25 )) "insights r$ROUND" || return 0
  say "== insights: real_starved.py $STARVED_STEADY+$STARVED_PERIODIC s, real_busy_sync.py $BUSY_SECS s"
  run_one insights starved adaptive 1 $(( STARVED_STEADY + STARVED_PERIODIC + 90 )) \
    "$PY" "$HERE/real_starved.py" "$STARVED_STEADY" "$STARVED_PERIODIC"
  run_one insights busy_sync adaptive 1 $(( BUSY_SECS + 90 )) "$PY" "$HERE/real_busy_sync.py" "$BUSY_SECS"
}

part_overhead() {
  [[ " $PARTS " == *" overhead "* ]] || return 0
  fits $(( OH_ROUNDS * 2 * (2 * OH_SECS + 6) )) "overhead r$ROUND" || return 0
  say "== overhead: launch_heavy.py launch+matmul, $OH_ROUNDS rounds of $OH_SECS s, injected vs not"
  local r i configs=(none adaptive)
  for ((r = 0; r < OH_ROUNDS; r++)); do
    for i in 0 1; do
      run_one overhead launch_heavy "${configs[$(((i + r) % 2))]}" "$r" 120 \
        "$PY" "$HERE/launch_heavy.py" "$OH_SECS" launch+matmul
    done
  done
}

for ((ROUND = 1; ROUND <= SUITE_REPEAT; ROUND++)); do
  (( SUITE_REPEAT > 1 )) && say "### suite round $ROUND of $SUITE_REPEAT"
  part_crash_functional
  part_accuracy
  part_profiler
  part_insights
  part_overhead
done

say "== collecting: the analyses' grace period and an upload window, then the server's answers"
sleep 8
echo "wall_s=$(( $(date +%s) - T0 ))" >> "$WORK/info.env"
curl -s -m 10 "http://$METRICS/metrics" > "$WORK/metrics.txt"
kill -0 "$AGENT" 2>/dev/null && echo "agent alive at the end" > "$WORK/agent_alive.txt"
grep -E '^(VmHWM|VmRSS)' "/proc/$AGENT/status" >> "$WORK/agent_alive.txt" 2>/dev/null
"$PY" "$HERE/real_suite_summary.py" collect "$WORK" "$API" > "$OUT/results.json" 2> "$WORK/collect.log" ||
  { say "collect failed"; tail -20 "$WORK/collect.log"; }
stop "$AGENT"
kill "$RSS_SAMPLER" 2>/dev/null
kill "$SERVER"; timeout 30 tail --pid="$SERVER" -f /dev/null || kill -9 "$SERVER"
"$PY" "$HERE/real_suite_summary.py" report "$OUT/results.json" > "$OUT/summary.md" 2>> "$WORK/collect.log"
cat "$OUT/summary.md"

echo "== failing runs' output (last 25 lines each, at most 12 runs)"
awk -F'\t' '$4 != "0" && $4 != "-" {print $6}' "$RUNS" | head -12 | while read -r log; do
  echo "--- $log"; tail -25 "$log"
done
echo "== warpscope-cuda lines in the workloads' output"
grep -h 'warpscope-cuda' "$WORK"/logs/*.log 2>/dev/null | sort | uniq -c | sort -rn | head -10
for f in agent agent-exact server; do
  [[ -f $WORK/$f.log ]] && { echo "== $f.log (last 5 lines)"; tail -5 "$WORK/$f.log"; }
done
echo "== collect.log"; tail -5 "$WORK/collect.log"
# Every run's output (each cut to its last 200 kB) and the server's answers.
(cd "$WORK" && for f in logs/*.log ./*.log; do tail -c 200000 "$f" > "$f.tail" && mv "$f.tail" "$f"; done
 tar czf "$OUT/raw.tgz" --exclude '*.sock' -- *)
say "done: $OUT/{real_suite.log,summary.md,results.json,raw.tgz}"
exec >&- 2>&-
wait "$TEE"
