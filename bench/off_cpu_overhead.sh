#!/usr/bin/env bash
# Benchmark (not a test): what off-CPU time costs, on a machine doing many
# context switches. `warpscope-agent run` at 19 Hz uploads to a real
# warpscope-server (embedded store) on loopback while a pipe ping-pong
# (bench/off_cpu_overhead/pingpong.c) makes about RATE blocking switches per
# second; the same run with and without --off-cpu, interleaved, ROUNDS times.
#
#   sudo bench/off_cpu_overhead.sh [ROUNDS=3] [SECONDS=60] [RATE=20000] [WARMUP=15]
#
# WS_BENCH_NO_BUILD=1 skips the bootstrap and build. WS_BENCH_PORT (default
# 17091) and WS_BENCH_METRICS_PORT (default 19591) are the server's and the
# agent's metrics loopback ports.
# Columns, medians over the rounds, over the steady window (WARMUP s after
# the agent's start to 1 s before the end):
#  - context switches per second: the growth of `ctxt` in /proc/stat (every
#    switch on the machine, blocking or not);
#  - agent steady CPU: on-CPU ns over /proc/PID/task/*/schedstat per wall
#    second (% of one core); steady RSS: the median of VmRSS every 5 s;
#  - BPF ns per switch: run_time_ns of ws_sched_switch and ws_off_cpu_end
#    together over run_cnt of ws_sched_switch (kernel.bpf_stats_enabled=1,
#    the agent's own programs, bench/lib/agent_bench.sh bpf_prog_stats), and
#    that time as % of one core (the kernel charges it to the switching
#    tasks, not to the agent); the CPU sampler's ws_cpu_sample per sample
#    beside it;
#  - off_cpu_sample_every at the end and timed waits recorded per second (the
#    agent's counters on its /metrics).
# Prints Markdown for docs/benchmarks.md on stdout, progress on stderr.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROUNDS=${1:-3}
SECS=${2:-60}
RATE=${3:-20000}
WARM=${4:-15}
(( SECS >= WARM + 10 )) || { echo "SECONDS must be at least WARMUP + 10" >&2; exit 2; }
if [[ -z ${WS_BENCH_NO_BUILD:-} ]]; then
  scripts/bootstrap.sh scripts/debian-packages-bench.txt
  scripts/build.sh >/dev/null
fi
AGENT=build/bin/warpscope-agent
SERVER=build/bin/warpscope-server
PORT=${WS_BENCH_PORT:-17091}
MPORT=${WS_BENCH_METRICS_PORT:-19591}
for f in "$AGENT" "$SERVER"; do [[ -x $f ]] || { echo "missing $f" >&2; exit 1; }; done

work=$(mktemp -d "${TMPDIR:-/tmp}/ws_offcpu_bench.XXXXXX")
source bench/lib/agent_bench.sh
bench_init
cc -O2 -o "$work/pingpong" bench/off_cpu_overhead/pingpong.c

ctxt() { local k v; while read -r k v; do [[ $k == ctxt ]] && { REPLY=$v; return; }; done </proc/stat; }

# One run: $1 = "on" or "off" (off-CPU time), $2 = tag. Results in R_*.
run_config() {
  local mode=$1 tag=$2 data=$work/$2.data state=$work/$2.state alog=$work/$2.agent.log slog=$work/$2.server.log
  local k agent server load t0 a1 a2 w1 w2 x1 x2 s1 s2 e1 e2 c1 c2 rss=() extra=()
  [[ $mode == on ]] && extra=(--off-cpu)
  echo 1 >/proc/sys/kernel/bpf_stats_enabled
  "$SERVER" --listen "127.0.0.1:$PORT" --data-dir "$data" >"$slog" 2>&1 &
  server=$!; LIVE[$!]=1
  for ((k = 0; k < 100; k++)); do
    http_get "$PORT" /healthz && break
    kill -0 "$server" 2>/dev/null || die "the server exited" "$slog"
    snooze 0.1
  done
  ((k < 100)) || die "the server does not answer on 127.0.0.1:$PORT" "$slog"
  "$work/pingpong" "$RATE" $((SECS + 30)) >/dev/null &
  load=$!; LIVE[$!]=1
  snooze 2
  now_us; t0=$REPLY
  "$AGENT" run --server "http://127.0.0.1:$PORT" --state-dir "$state" --frequency 19 \
    --metrics-listen "127.0.0.1:$MPORT" "${extra[@]}" >"$alog" 2>&1 &
  agent=$!; LIVE[$!]=1
  for ((k = 1; k <= SECS - 1; k++)); do
    wait_until $((t0 + k * 1000000))
    kill -0 "$agent" 2>/dev/null || die "the agent exited after ${k} s" "$alog"
    if ((k == WARM || k == SECS - 1)); then
      oncpu_ns "$agent"; local a=$REPLY
      now_us; local w=$REPLY
      ctxt; local x=$REPLY
      bpf_prog_stats "$agent" ws_sched_switch; local s=$REPLY
      bpf_prog_stats "$agent" ws_off_cpu_end; local e=$REPLY
      bpf_prog_stats "$agent" ws_cpu_sample; local c=$REPLY
      if ((k == WARM)); then a1=$a w1=$w x1=$x s1=$s e1=$e c1=$c; else a2=$a w2=$w x2=$x s2=$s e2=$e c2=$c; fi
    fi
    if ((k >= WARM && (k - WARM) % 5 == 0)); then status_kb "$agent" VmRSS; rss+=("$REPLY"); fi
  done
  read_counters "$MPORT"
  local secs_us=$((w2 - w1))
  R_CTXT=$(awk -v a="$x1" -v b="$x2" -v t="$secs_us" 'BEGIN { printf "%.0f", (b - a) / (t / 1e6) }')
  R_CPU=$(awk -v a="$a1" -v b="$a2" -v t="$secs_us" 'BEGIN { printf "%.3f", 100 * (b - a) / (t * 1000) }')
  R_RSS=$(median_of "${rss[*]}" | awk '{ printf "%.1f", $1 / 1024 }')
  read -r st1 sc1 <<<"$s1"; read -r st2 sc2 <<<"$s2"; read -r et1 _ <<<"$e1"; read -r et2 _ <<<"$e2"
  read -r ct1 cc1 <<<"$c1"; read -r ct2 cc2 <<<"$c2"
  R_BPF_SWITCH=$(awk -v t=$((st2 - st1 + et2 - et1)) -v n=$((sc2 - sc1)) 'BEGIN { if (n > 0) printf "%.0f", t / n; else print "n/a" }')
  R_BPF_PCT=$(awk -v t=$((st2 - st1 + et2 - et1)) -v w="$secs_us" 'BEGIN { printf "%.3f", 100 * t / (w * 1000) }')
  R_BPF_SAMPLE=$(awk -v t=$((ct2 - ct1)) -v n=$((cc2 - cc1)) 'BEGIN { if (n > 0) printf "%.0f", t / n; else print "n/a" }')
  R_EVERY=${CNT[off_cpu_sample_every]:-n/a}
  R_WAITS=$(awk -v n="${CNT[off_cpu_waits_recorded]:-0}" -v t=$((SECS - 1)) 'BEGIN { printf "%.0f", n / t }')
  stop_pids "$agent" "$load" "$server"
  echo 0 >/proc/sys/kernel/bpf_stats_enabled
  echo "round $tag: off-CPU $mode: ${R_CTXT} switches/s, agent ${R_CPU}% RSS ${R_RSS} MB, BPF ${R_BPF_SWITCH} ns/switch" \
    "(${R_BPF_PCT}%), ${R_BPF_SAMPLE} ns/sample, every ${R_EVERY}, ${R_WAITS} waits/s" >&2
}

declare -A cpu rssm ctx bsw bpct bsam every waits
for ((r = 1; r <= ROUNDS; r++)); do
  for mode in off on; do
    run_config "$mode" "$r.$mode"
    cpu[$mode]+="$R_CPU "; rssm[$mode]+="$R_RSS "; ctx[$mode]+="$R_CTXT "; bsw[$mode]+="$R_BPF_SWITCH "
    bpct[$mode]+="$R_BPF_PCT "; bsam[$mode]+="$R_BPF_SAMPLE "; every[$mode]+="$R_EVERY "; waits[$mode]+="$R_WAITS "
  done
done

echo "Machine: $(nproc) CPUs, $(uname -r), $(date -u +%F); pipe ping-pong paced to $RATE blocking switches/s;" \
  "agent run at 19 Hz; $ROUNDS interleaved rounds of $SECS s, steady window $WARM s to $((SECS - 1)) s; medians."
echo
echo "| off-CPU | context switches/s | agent steady CPU (% of one core) | agent steady RSS (MB) | off-CPU BPF (ns per switch) | off-CPU BPF (% of one core) | CPU sampler BPF (ns per sample) | off_cpu_sample_every | timed waits recorded/s |"
echo "|---|---|---|---|---|---|---|---|---|"
for mode in off on; do
  if [[ $mode == off ]]; then b1=n/a b2=n/a e=n/a w=n/a; else
    b1=$(median_of "${bsw[$mode]}") b2=$(median_of "${bpct[$mode]}") e=$(median_of "${every[$mode]}") w=$(median_of "${waits[$mode]}")
  fi
  echo "| $mode | $(median_of "${ctx[$mode]}") | $(median_of "${cpu[$mode]}") | $(median_of "${rssm[$mode]}") | $b1 | $b2 |" \
    "$(median_of "${bsam[$mode]}") | $e | $w |"
done
echo
extra=$(awk -v a="$(median_of "${cpu[on]}")" -v b="$(median_of "${cpu[off]}")" 'BEGIN { printf "%.3f", a - b }')
echo "Off-CPU time costs the agent $extra % of one core more (median on − median off)."
