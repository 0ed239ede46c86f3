#!/usr/bin/env bash
# GPU host: which part of warpscope a crashing workload dies of (not a test).
#   OUT=/tmp/cs bench/gpu/crash_split.sh DIR
# DIR holds the release unpacked (bin/warpscope-agent, bin/warpscope-server)
# and the injection libraries to compare, named in LIBS.
#
# One server and one agent at default settings run throughout; the
# workloads of real_suite.sh that failed at defaults (real_jax.py,
# real_loader.py, real_compile.py, and real_profiler_inside.py, whose
# torch.profiler must keep working) run REPEATS times under each configuration, PAR at a time,
# all configurations interleaved:
#   none          not injected (the agent's BPF side only)
#   dormant-NAME  injected with library NAME whose agent socket leads nowhere
#   NAME          injected with library NAME, connected to the agent
# Every run has bench/gpu/segv_report.so preloaded (built here when missing):
# a death by signal leaves the thread, the faulting address and its mapping,
# and a native backtrace in the run's log.
#
# Knobs: LIBS="lib=DIR/lib/libwarpscope_cuda.so" (NAME=PATH ...),
#   WORKLOADS="jax loader compile profiler",
#   REPEATS="jax=3 loader=3 compile=6 profiler=1", PAR=6,
#   DORMANT="NAME ..." (the libraries also run dormant; default: every one), JAX_STEPS=100 LOADER_SECS=6
#   COMPILE_SECS=1 PROF_STEPS=600, AGENT_FLAGS=, PY=/opt/torch/.venv/bin/python3,
#   SEGV_REPORT=PATH (segv_report.so built elsewhere; else cc builds it)
# Writes $OUT/runs.tsv (workload, config, index, exit status, ms, log),
# $OUT/summary.txt (runs and deaths per workload and configuration, then each
# death's report), $OUT/logs/ (the logs of failed runs), and the agent's
# memory: $OUT/agent_rss.tsv and $OUT/metrics_at_peak.txt
# (agent_rss_sampler.sh).
set -u
DIR=$(cd "${1:?usage: crash_split.sh DIR}" && pwd)
OUT=${OUT:-/tmp/ws-crash-split}
WORK=${WORK:-/tmp/ws-crash-work}
PY=${PY:-/opt/torch/.venv/bin/python3}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
LIBS=${LIBS:-lib=$DIR/lib/libwarpscope_cuda.so}
WORKLOADS=${WORKLOADS:-jax loader compile profiler}
REPEATS=${REPEATS:-jax=3 loader=3 compile=6 profiler=1}
PAR=${PAR:-6} DORMANT=${DORMANT-all}
JAX_STEPS=${JAX_STEPS:-100} LOADER_SECS=${LOADER_SECS:-6} COMPILE_SECS=${COMPILE_SECS:-1} PROF_STEPS=${PROF_STEPS:-600}
PORT=17190 METRICS=127.0.0.1:19490
SOCK=/tmp/ws-split-sock/cuda.sock
T0=$(date +%s)
say() { echo "[$(( $(date +%s) - T0 ))s] $*"; }

rm -rf "$WORK" "$OUT" /tmp/ws-split-data /tmp/ws-split-agent
mkdir -p "$OUT/logs" "$WORK/logs"
: > "$OUT/runs.tsv"
PRELOAD=${SEGV_REPORT:-$WORK/segv_report.so}
[[ -f $PRELOAD ]] || cc -shared -fPIC -O1 -o "$PRELOAD" "$HERE/segv_report.c" -ldl || exit 1

SERVER='' AGENT=''
cleanup() { for p in $AGENT $SERVER; do kill -0 "$p" 2>/dev/null && kill -9 "$p"; done; return 0; }
trap cleanup EXIT
LD_LIBRARY_PATH=$DIR/lib "$DIR/bin/warpscope-server" --listen "127.0.0.1:$PORT" --data-dir /tmp/ws-split-data \
  > "$WORK/server.log" 2>&1 &
SERVER=$!
sleep 1
# shellcheck disable=SC2086  # AGENT_FLAGS is a list of flags
LD_LIBRARY_PATH=$DIR/lib "$DIR/bin/warpscope-agent" run --server "http://127.0.0.1:$PORT" \
  --state-dir /tmp/ws-split-agent --upload-interval 2s --cuda-socket "$SOCK" --metrics-listen "$METRICS" \
  ${AGENT_FLAGS:-} > "$WORK/agent.log" 2>&1 &
AGENT=$!
sleep 4
kill -0 "$AGENT" 2>/dev/null || { say "the agent did not start:"; tail -20 "$WORK/agent.log"; exit 1; }
"$HERE/agent_rss_sampler.sh" "$AGENT" "$METRICS" "$OUT" "$T0" &

# The first torch.compile fills inductor's cache alone, not injected.
if [[ " $WORKLOADS " == *" compile "* ]]; then
  say "warming inductor's cache"
  "$PY" "$HERE/real_compile.py" "$COMPILE_SECS" > "$WORK/compile_warm.log" 2>&1 || tail -5 "$WORK/compile_warm.log"
fi

# run_one WORKLOAD CONFIG INDEX
run_one() {
  local w=$1 config=$2 i=$3 env=(LD_PRELOAD="$PRELOAD" PYTHONFAULTHANDLER=1) cmd lib name t0 rc
  local log=$WORK/logs/$w.$config.$i.log
  case $config in
    none) ;;
    dormant-*) name=${config#dormant-}; lib=$(lib_path "$name")
      env+=(CUDA_INJECTION64_PATH="$lib" WARPSCOPE_AGENT_SOCKET=/tmp/ws-split-sock/nobody.sock) ;;
    *) lib=$(lib_path "$config"); env+=(CUDA_INJECTION64_PATH="$lib" WARPSCOPE_AGENT_SOCKET="$SOCK") ;;
  esac
  case $w in
    jax) cmd=("$PY" "$HERE/real_jax.py" "$JAX_STEPS") ;;
    loader) cmd=("$PY" "$HERE/real_loader.py" "$LOADER_SECS") ;;
    compile) cmd=("$PY" "$HERE/real_compile.py" "$COMPILE_SECS") ;;
    profiler) cmd=("$PY" "$HERE/real_profiler_inside.py" "$PROF_STEPS") ;;
  esac
  t0=$(date +%s%3N)
  env "${env[@]}" timeout -k 5 120 "${cmd[@]}" > "$log" 2>&1 < /dev/null
  rc=$?
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$w" "$config" "$i" "$rc" "$(( $(date +%s%3N) - t0 ))" "$log" >> "$OUT/runs.tsv"
  if (( rc != 0 )); then
    cp "$log" "$OUT/logs/"
    say "  $w/$config #$i: exit $rc"
  fi
}
repeats_of() {  # WORKLOAD: its count in REPEATS (1 when not named)
  local n
  n=$(tr ' ' '\n' <<<"$REPEATS" | awk -F= -v w="$1" '$1 == w {print $2}')
  echo "${n:-1}"
}
lib_path() { local e; for e in $LIBS; do [[ ${e%%=*} == "$1" ]] && { echo "${e#*=}"; return; }; done; }

CONFIGS=(none)
for e in $LIBS; do
  CONFIGS+=("${e%%=*}")
  [[ $DORMANT == all || " $DORMANT " == *" ${e%%=*} "* ]] && CONFIGS+=("dormant-${e%%=*}")
done
# Round-robin over the configurations, so each sees the same host load.
JOBS=()
max=0
for w in $WORKLOADS; do
  n=$(repeats_of "$w")
  (( n > max )) && max=$n
done
for ((i = 1; i <= max; i++)); do
  for w in $WORKLOADS; do
    (( i <= $(repeats_of "$w") )) || continue
    for c in "${CONFIGS[@]}"; do JOBS+=("$w $c $i"); done
  done
done
say "${#JOBS[@]} runs over configurations ${CONFIGS[*]}, $PAR at a time"
for job in "${JOBS[@]}"; do
  while (( $(jobs -rp | wc -l) >= PAR + 2 )); do wait -n; done  # + the server and the agent
  # shellcheck disable=SC2086
  run_one $job &
done
while (( $(jobs -rp | wc -l) > 2 )); do wait -n; done
say "runs done"
kill -0 "$AGENT" 2>/dev/null && say "agent alive at the end, $(grep VmHWM /proc/$AGENT/status | tr -s ' ')"

{
  echo "# runs, deaths (exit status not 0) per workload and configuration"
  awk -F'\t' '{k=$1" "$2; n[k]++; if ($4 != 0) d[k]++} END {for (k in n) printf "%-26s runs %2d  failed %2d\n", k, n[k], d[k]+0}' \
    "$OUT/runs.tsv" | sort
  echo
  echo "# each failed run: its exit status, the crash report, the last lines"
  awk -F'\t' '$4 != 0 {print $4 "\t" $6}' "$OUT/runs.tsv" | while IFS=$'\t' read -r rc log; do
    echo "--- $(basename "$log"): exit $rc"
    grep -E '^segv_report' "$log" | head -40
    grep -vE '^segv_report' "$log" | tail -12
  done
  echo
  echo "# warpscope-cuda lines"
  grep -h 'warpscope-cuda' "$WORK"/logs/*.log 2>/dev/null | sort | uniq -c | sort -rn | head
  echo "# the agent's memory: peak VmRSS (s, kB: VmRSS RssAnon RssFile), last sample, the largest byte gauges at the peak"
  sort -t$'\t' -k2,2n "$OUT/agent_rss.tsv" 2>/dev/null | tail -1
  tail -1 "$OUT/agent_rss.tsv" 2>/dev/null
  head -1 "$OUT/metrics_at_peak.txt" 2>/dev/null
  grep -E '^warpscope_agent_cache_bytes|event="heap_' "$OUT/metrics_at_peak.txt" 2>/dev/null | sort -k2,2gr | head -25
  echo "# agent.log, last lines"
  tail -8 "$WORK/agent.log"
} > "$OUT/summary.txt"
cat "$OUT/summary.txt"
