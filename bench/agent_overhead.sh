#!/usr/bin/env bash
# Benchmark (not a test): the agent's CPU and memory cost while profiling every
# CPU of a busy machine, side by side with `perf record -g -a` at the same
# frequency, in interleaved rounds of one run.
#
#   sudo bench/agent_overhead.sh [ROUNDS=3] [SECONDS=30]
#
# For each round and each of {warpscope 19 Hz, perf 19 Hz, warpscope 99 Hz,
# perf 99 Hz} it keeps every CPU busy (one cpu_split per CPU plus one
# syscall_heavy), runs the profiler for SECONDS and reports:
#  - steady-state CPU: the profiler's on-CPU time (/proc/PID/task/*/schedstat)
#    between 5 s after start and 1 s before the end, per wall second — what an
#    always-on agent costs;
#  - total CPU per wall second over the whole run (user+system from GNU time),
#    which includes start-up (BPF load, kallsyms) and writing the output;
#  - peak RSS (GNU time);
#  - for warpscope, the BPF program's own run time (kernel.bpf_stats_enabled),
#    which the kernel charges to the sampled tasks, not to the agent.
# Prints a Markdown table of medians for docs/benchmarks.md.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROUNDS=${1:-3}
SECS=${2:-30}
(( SECS >= 12 )) || { echo "SECONDS must be at least 12" >&2; exit 2; }
scripts/bootstrap.sh scripts/debian-packages-bench.txt
scripts/build.sh >/dev/null
AGENT=build/bin/warpscope-agent
PROGS=build/testprogs
PERF=$(command -v perf || ls /usr/bin/perf_* 2>/dev/null | head -1)
TIME=/usr/bin/time
work=$(mktemp -d /tmp/ws_bench.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
ncpu=$(nproc)

start_load() {
  for _ in $(seq "$ncpu"); do "$PROGS/cpu_split" $((SECS + 5)) & done
  "$PROGS/syscall_heavy" $((SECS + 5)) >/dev/null &
}
stop_load() { kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; }

bpf_run_ns() {  # total run_time_ns of warpscope's perf_event program, 0 if none
  bpftool prog show -j 2>/dev/null | tr '}' '\n' | grep '"name":"ws_cpu_sample"' |
    sed -n 's/.*"run_time_ns":\([0-9]*\).*/\1/p' | awk '{s+=$1} END {print s+0}'
}

oncpu_ns() {  # $1 = pid of GNU time; sums the on-CPU ns of its child's threads
  local child
  child=$(pgrep -P "$1" | head -1)
  cat /proc/"$child"/task/*/schedstat 2>/dev/null | awk '{s+=$1} END {print s+0}'
}

steady_sampler() {  # $1 = pid of GNU time, $2 = output file: ns/s between t=5s and t=SECS-1
  sleep 5
  local a b
  a=$(oncpu_ns "$1")
  sleep $((SECS - 6))
  b=$(oncpu_ns "$1")
  echo $(( (b - a) / (SECS - 6) )) >"$2"
}

one_run() {  # $1 = tool, $2 = Hz; prints "steady_cpu total_cpu peak_rss_kb bpf_ns_per_s"
  local tool=$1 hz=$2 out=$work/$1_$2
  start_load
  sleep 1
  if [[ $tool == warpscope ]]; then
    sysctl -qw kernel.bpf_stats_enabled=1
    # The BPF stats counter is sampled inside the run by a background reader.
    ( sleep $((SECS / 2)); bpf_run_ns >"$out.bpf1"; sleep $((SECS / 4)); bpf_run_ns >"$out.bpf2" ) &
    local reader=$!
    $TIME -f '%U %S %M %e' -o "$out.time" "$AGENT" record --all --frequency "$hz" --duration "$SECS" \
      --output "$out.pb.gz" --top 0 2>"$out.log" &
    local timer=$!
    steady_sampler "$timer" "$out.steady" &
    local steady=$!
    wait "$timer" "$reader" "$steady"
    sysctl -qw kernel.bpf_stats_enabled=0
    local bpf_ns=$(( ( $(cat "$out.bpf2") - $(cat "$out.bpf1") ) * 4 / SECS ))
  else
    $TIME -f '%U %S %M %e' -o "$out.time" "$PERF" record -q -g -a -F "$hz" -o "$out.data" -- sleep "$SECS" \
      2>"$out.log" >/dev/null &
    local timer=$!
    steady_sampler "$timer" "$out.steady" &
    local steady=$!
    wait "$timer" "$steady"
    local bpf_ns=0
  fi
  stop_load
  read -r user sys rss wall <"$out.time"
  awk -v u="$user" -v s="$sys" -v r="$rss" -v w="$wall" -v b="$bpf_ns" -v st="$(cat "$out.steady")" \
    'BEGIN { printf "%.5f %.5f %d %d\n", st / 1e9, (u + s) / w, r, b }'
}

median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }

declare -A steady cpu rss bpf
configs=("warpscope 19" "perf 19" "warpscope 99" "perf 99")
for round in $(seq "$ROUNDS"); do
  for c in "${configs[@]}"; do
    read -r t h <<<"$c"
    read -r st u r b < <(one_run "$t" "$h")
    echo "round $round: $t ${h} Hz: steady CPU/wall-s $st, total CPU/wall-s $u, peak RSS ${r} KB, BPF ns/s $b" >&2
    steady[$c]+="$st "; cpu[$c]+="$u "; rss[$c]+="$r "; bpf[$c]+="$b "
  done
done

echo "Machine: $(nproc) CPUs, $(uname -r), $(date -u +%Y-%m-%d); $ROUNDS interleaved rounds of ${SECS}s; medians."
echo
echo "| profiler | Hz | steady-state CPU (% of one core) | whole-run CPU incl. start-up (% of one core) | peak RSS (MB) | BPF program time (% of one core) |"
echo "|---|---|---|---|---|---|"
for c in "${configs[@]}"; do
  read -r t h <<<"$c"
  ms=$(tr ' ' '\n' <<<"${steady[$c]}" | grep -v '^$' | median)
  mc=$(tr ' ' '\n' <<<"${cpu[$c]}" | grep -v '^$' | median)
  mr=$(tr ' ' '\n' <<<"${rss[$c]}" | grep -v '^$' | median)
  mb=$(tr ' ' '\n' <<<"${bpf[$c]}" | grep -v '^$' | median)
  if [[ $t == warpscope ]]; then bpfcol=$(awk -v b="$mb" 'BEGIN {printf "%.3f", b / 1e7}'); else bpfcol="n/a (in-kernel, not measured)"; fi
  awk -v t="$t" -v h="$h" -v s="$ms" -v c="$mc" -v r="$mr" -v b="$bpfcol" \
    'BEGIN { printf "| %s | %s | %.3f | %.3f | %.1f | %s |\n", t, h, s * 100, c * 100, r / 1024, b }'
done
