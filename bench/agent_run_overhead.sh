#!/usr/bin/env bash
# Benchmark (not a test): what the agent costs in its production mode,
# `warpscope-agent run` uploading to a real warpscope-server, on a busy
# machine with process churn, side by side with `perf record -g -a` at the
# same frequency in the same window.
#
#   sudo bench/agent_run_overhead.sh [ROUNDS=1] [SECONDS=600] [WARMUP=20]
#
# WS_BENCH_NO_BUILD=1 skips the bootstrap and build (an already built tree).
# WS_BENCH_PORT (default 17081) and WS_BENCH_METRICS_PORT (default 19491) are
# the server's and the agent's metrics loopback ports; WS_BENCH_IDLE (default
# 500) is the number of idle processes in the start-up measurement.
#
# Every configuration, {19, 99} Hz x {0, 5, 20} new processes per second,
# interleaved within each round, runs for SECONDS on a fresh server, data
# directory and agent state directory:
#  - load: one testprogs/cpu_split per CPU for the whole configuration;
#  - churn: bench/agent_run_overhead/churn.c (compiled with cc into the work
#    directory) starts the processes on a fixed schedule, alternately
#    testprogs/short_lived 0.005 (5 ms of CPU, then exit) and python3 -c
#    importing json and zlib and compressing a small JSON text (a few ms
#    after the interpreter's start). The driver runs at real-time priority
#    (its children do not), so busy CPUs do not delay its starts. The
#    driver's and the churn processes' CPU is load, not counted as anyone's
#    cost;
#  - warpscope-server --listen 127.0.0.1:PORT --data-dir DIR (embedded store);
#  - warpscope-agent run --server http://127.0.0.1:PORT --state-dir DIR
#    --frequency HZ, every other setting at its default (10 s upload
#    interval) except --metrics-listen 127.0.0.1:MPORT, which serves the
#    counters read at the end;
#  - perf record -q -g -a -F HZ -o FILE -- sleep SECONDS, started together
#    with the agent: both profile the same load at the same time.
# Columns, medians over the rounds:
#  - agent steady CPU: on-CPU ns summed over /proc/PID/task/*/schedstat
#    between WARMUP s after the agent's start and 1 s before the end, per
#    wall second (% of one core);
#  - agent CPU incl. start-up: user+system time of the whole process
#    (/proc/PID/stat, which keeps the time of threads that exited) from its
#    start to 1 s before the end, per wall second;
#  - peak RSS: VmHWM just before the agent is stopped; steady RSS: the
#    median of VmRSS read every 5 s from WARMUP on;
#  - BPF time per sample: run_time_ns / run_cnt of the agent's ws_cpu_sample
#    program (kernel.bpf_stats_enabled=1; the program found by name with
#    bpftool prog show, its counts read from the agent's /proc/PID/fdinfo, so
#    other agents on the machine do not count), deltas over the steady
#    window; and that run time as % of one core (the kernel charges it to the
#    sampled tasks, not to the agent);
#  - upload: the agent counts batches but not bytes, so this is what reached
#    the server's port: an iptables counting rule on lo for TCP to PORT
#    (removed at exit), packets' bytes less their IP and TCP headers (52 B
#    each with TCP timestamps, else 40), i.e. HTTP heads and zstd bodies, over
#    the steady window, in KB per minute. Without iptables it is the growth
#    of the server's data directory instead (the table header says which);
#  - perf steady CPU and peak RSS: the same measures of the perf process
#    over the same window (its exit pass, build ids, comes after the window
#    and is not in either).
# A second table: the agent's counters at the end (warpscope_agent_events_total
# on its /metrics, cumulative since its start, as of its last upload window):
# elf_opens, every counter whose name contains binary_cache,
# unwind_tables_built, unwind_tables_rebuilt, unwind_tables_freed,
# symbol_tables_loaded, unwind_processes_described; n/a for those this agent
# does not have.
#
# Then the start-up measurement, once: WS_BENCH_IDLE idle processes (half
# `sleep`, half python3 sleeping after its imports) are started and waited
# for, then the load and a server as above and the agent at 19 Hz with no
# churn and no perf for SECONDS. It reports the agent's CPU time in its first
# 15 s, the time (since its start) at which unwind_processes_described last
# rose, read from /metrics once a second during the warm-up and every 10 s
# after it (the agent publishes its counters once per 10 s upload window, so
# this has 10 s resolution), and its steady CPU and memory with
# those processes present, beside the 19 Hz no-churn configuration (which
# had perf alongside) as the baseline: whether per-window work grows with
# the number of processes. The idle processes are killed afterwards.
#
# The sampling is done with bash builtins (no processes started) apart from
# bpftool and iptables at the steady window's two edges, so the measurement
# adds next to no churn of its own. Every process started here (load, churn,
# server, agent, perf, the idle processes) is stopped on exit, Ctrl-C or
# failure, and kernel.bpf_stats_enabled is set back to 0.
# Prints Markdown tables for docs/benchmarks.md on stdout, progress on stderr.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROUNDS=${1:-1}
SECS=${2:-600}
WARM=${3:-20}
(( WARM >= 1 && SECS >= 20 && SECS >= WARM + 10 )) || {
  echo "SECONDS must be at least 20 and at least WARMUP + 10" >&2
  exit 2
}
if [[ -z ${WS_BENCH_NO_BUILD:-} ]]; then
  scripts/bootstrap.sh scripts/debian-packages-bench.txt
  scripts/build.sh >/dev/null
fi
AGENT=build/bin/warpscope-agent
SERVER=build/bin/warpscope-server
PROGS=build/testprogs
PERF=$(command -v perf || ls /usr/bin/perf_* 2>/dev/null | head -1)
PY=/usr/bin/python3
[[ -x $PY ]] || PY=$(command -v python3)
PORT=${WS_BENCH_PORT:-17081}
MPORT=${WS_BENCH_METRICS_PORT:-19491}
IDLE=${WS_BENCH_IDLE:-500}
PY_WORK='import json, zlib; zlib.compress(json.dumps([{"n": i, "s": str(i)} for i in range(1000)]).encode())'
ncpu=$(nproc)
for f in "$AGENT" "$SERVER" "$PROGS/cpu_split" "$PROGS/short_lived" "$PERF" "$PY"; do
  [[ -x $f ]] || { echo "missing $f" >&2; exit 1; }
done
for p in "$PORT" "$MPORT"; do
  if { exec {probe}<>"/dev/tcp/127.0.0.1/$p"; } 2>/dev/null; then
    exec {probe}>&-
    echo "port $p is in use (WS_BENCH_PORT / WS_BENCH_METRICS_PORT choose others)" >&2
    exit 2
  fi
done

work=$(mktemp -d "${TMPDIR:-/tmp}/ws_run_bench.XXXXXX")
source bench/lib/agent_bench.sh  # LIVE: every process started here and not stopped yet (cleanup stops them)
IPT_RULE=()      # the iptables counting rule, once inserted
bench_cleanup_extra() {
  if ((${#IPT_RULE[@]})); then iptables -w -D INPUT "${IPT_RULE[@]}" 2>/dev/null || true; fi
}
bench_init

# BPF run time of this agent's own ws_cpu_sample programs.
bpf_stats() { bpf_prog_stats "$1" ws_cpu_sample; }  # REPLY: "run_time_ns run_cnt"

# Upload bytes: an iptables rule without a target counts the packets to the
# server's port on lo and lets them through.
HDR=52
[[ $(</proc/sys/net/ipv4/tcp_timestamps) != 0 ]] || HDR=40
rule=(-i lo -p tcp -d 127.0.0.1 --dport "$PORT" -m comment --comment "ws_bench_upload_$$")
if iptables -w -I INPUT "${rule[@]}" 2>/dev/null; then
  IPT_RULE=("${rule[@]}")
  UPLOAD_HOW="KB/min to the server's port: TCP payload"
else
  UPLOAD_HOW="KB/min: growth of the server's data dir (no iptables)"
fi
upload_bytes() {  # $1 = server data dir; REPLY: the upload measure now (bytes)
  if ((${#IPT_RULE[@]})); then
    REPLY=$(iptables -w -nvxL INPUT | awk -v c="ws_bench_upload_$$" -v h="$HDR" '$0 ~ c { print $2 - h * $1; exit }' || true)
  else
    REPLY=$(du -sb "$1" 2>/dev/null | awk '{print $1}' || true)
  fi
  REPLY=${REPLY:-0}
}

cc -O2 -o "$work/churn" bench/agent_run_overhead/churn.c

# One configuration: $1 = Hz, $2 = new processes per second, $3 = "perf"
# (perf alongside) or "startup" (no perf; the agent's counters polled every
# second), $4 = tag. Results in R_* variables.
run_config() {
  local hz=$1 churn=$2 mode=$3 tag=$4
  local data=$work/$tag.data state=$work/$tag.state alog=$work/$tag.agent.log slog=$work/$tag.server.log
  local plog=$work/$tag.perf.log clog=$work/$tag.churn.log
  local load=() p churn_pid='' agent perf='' t0 k
  echo 1 >/proc/sys/kernel/bpf_stats_enabled

  for ((p = 0; p < ncpu; p++)); do
    "$PROGS/cpu_split" $((SECS + 30)) &
    load+=($!); LIVE[$!]=1
  done
  "$SERVER" --listen "127.0.0.1:$PORT" --data-dir "$data" >"$slog" 2>&1 &
  local server=$!; LIVE[$!]=1
  for ((k = 0; k < 100; k++)); do
    http_get "$PORT" /healthz && break
    kill -0 "$server" 2>/dev/null || die "the server exited" "$slog"
    snooze 0.1
  done
  ((k < 100)) || die "the server does not answer on 127.0.0.1:$PORT" "$slog"
  if ((churn > 0)); then
    "$work/churn" "$churn" $((SECS + 30)) "$PROGS/short_lived" 0.005 -- "$PY" -c "$PY_WORK" 2>"$clog" &
    churn_pid=$!; LIVE[$!]=1
  fi
  snooze 2

  now_us; t0=$REPLY
  "$AGENT" run --server "http://127.0.0.1:$PORT" --state-dir "$state" --frequency "$hz" \
    --metrics-listen "127.0.0.1:$MPORT" >"$alog" 2>&1 &
  agent=$!; LIVE[$!]=1
  if [[ $mode == perf ]]; then
    "$PERF" record -q -g -a -F "$hz" -o "$work/$tag.perf.data" -- sleep "$SECS" >"$plog" 2>&1 &
    perf=$!; LIVE[$!]=1
  fi

  local rss=() a1 a2 p1=0 p2=0 b1 b2 u1 u2 w1 w2 described='' last_rise=0 d rt1 rc1 rt2 rc2
  R_C15=0
  for ((k = 1; k <= SECS - 1; k++)); do
    wait_until $((t0 + k * 1000000))
    kill -0 "$agent" 2>/dev/null || die "the agent exited after ${k} s" "$alog"
    if [[ -n $perf ]] && ! kill -0 "$perf" 2>/dev/null; then die "perf exited after ${k} s" "$plog"; fi
    kill -0 "$server" 2>/dev/null || die "the server exited ${k} s after the agent's start" "$slog"
    if [[ -n $churn_pid ]] && ! kill -0 "$churn_pid" 2>/dev/null; then die "the churn driver exited after ${k} s" "$clog"; fi
    if ((k == 15)); then cputime_ns "$agent"; R_C15=$REPLY; fi
    if ((k == WARM)); then
      oncpu_ns "$agent"; a1=$REPLY
      [[ -z $perf ]] || { oncpu_ns "$perf"; p1=$REPLY; }
      now_us; w1=$REPLY
      bpf_stats "$agent"; b1=$REPLY
      upload_bytes "$data"; u1=$REPLY
    fi
    if ((k >= WARM && (k - WARM) % 5 == 0)); then status_kb "$agent" VmRSS; rss+=("$REPLY"); fi
    # Each second until the warm-up ends, then every 10 s (the agent publishes
    # its counters once per upload window anyway), so the scrapes cost the
    # steady window next to nothing.
    if [[ $mode == startup ]] && ((k < WARM || (k - WARM) % 10 == 0)); then
      read_counters "$MPORT"
      d=${CNT[unwind_processes_described]:-}
      if [[ -n $d && $d != "$described" ]]; then described=$d; last_rise=$k; fi
    fi
  done
  # 1 s before the end (perf's sleep ends at SECONDS).
  oncpu_ns "$agent"; a2=$REPLY
  [[ -z $perf ]] || { oncpu_ns "$perf"; p2=$REPLY; }
  now_us; w2=$REPLY
  bpf_stats "$agent"; b2=$REPLY
  [[ $(</proc/sys/kernel/bpf_stats_enabled) == 1 ]] ||
    echo "warning: something set kernel.bpf_stats_enabled to 0 during the run: the BPF columns undercount" >&2
  upload_bytes "$data"; u2=$REPLY
  cputime_ns "$agent"; local whole=$REPLY
  status_kb "$agent" VmHWM; R_HWM=$REPLY
  R_PERF_HWM=0
  [[ -z $perf ]] || { status_kb "$perf" VmHWM; R_PERF_HWM=$REPLY; }
  read_counters "$MPORT"

  kill -TERM "$agent" 2>/dev/null || true
  wait_gone "$agent" 60 || { echo "the agent did not stop within 60 s: killed" >&2; stop_pids "$agent"; }
  R_AGENT_NOTE=$(sed -n 's/^warpscope-agent: stopped/stopped/p' "$alog")
  if [[ -n $perf ]]; then
    wait_gone "$perf" 300 || { echo "perf did not finish within 300 s of its end: stopped" >&2; stop_pids "$perf"; }
  fi
  R_CHURN_NOTE=
  if [[ -n $churn_pid ]]; then
    stop_pids "$churn_pid"
    R_CHURN_NOTE=$(sed -n 's/^churn: //p' "$clog")
  fi
  stop_pids "${load[@]}" "$server"
  rm -rf "$work/$tag.perf.data" "$data" "$state"

  local wall_us=$((w2 - w1))
  R_STEADY=$(((a2 - a1) * 1000000 / wall_us))      # ns per wall second
  R_TOTAL=$((whole * 1000000 / (w2 - t0)))
  R_PERF_STEADY=$(((p2 - p1) * 1000000 / wall_us))
  read -r rt1 rc1 <<<"$b1"
  read -r rt2 rc2 <<<"$b2"
  R_BPF_NS=$(((rc2 - rc1) > 0 ? (rt2 - rt1) / (rc2 - rc1) : 0))
  R_BPF_RATE=$(((rt2 - rt1) * 1000000 / wall_us))  # ns per wall second
  R_BPF_RUNS=$(((rc2 - rc1) * 1000000 / wall_us))
  R_UPLOAD=$(((u2 - u1) * 60 * 1000000 / wall_us))  # bytes per minute
  R_RSS=$(printf '%s\n' "${rss[@]}" | median)
  R_DESCRIBED=$described
  R_LAST_RISE=$last_rise
}


# The counters of the second table.
COUNTERS=(elf_opens binary_cache unwind_tables_built unwind_tables_rebuilt unwind_tables_freed symbol_tables_loaded
  unwind_processes_described)
declare -A steady total hwm rssm bpfns bpfrate upload psteady phwm c15 cvals
declare -A bc_names
keep_counters() {  # $1 = configuration
  local n
  for n in "${!CNT[@]}"; do
    if [[ $n == *binary_cache* ]]; then
      bc_names[$n]=1
      cvals[$1|$n]+="${CNT[$n]} "
    fi
  done
  for n in "${COUNTERS[@]}"; do
    [[ $n == binary_cache || -z ${CNT[$n]:-} ]] || cvals[$1|$n]+="${CNT[$n]} "
  done
}

configs=("19 0" "99 0" "19 5" "99 5" "19 20" "99 20")
echo "$ncpu CPUs; ${#configs[@]} configurations x $ROUNDS rounds of ${SECS} s, then the start-up measurement" >&2
for round in $(seq "$ROUNDS"); do
  for c in "${configs[@]}"; do
    read -r hz churn <<<"$c"
    run_config "$hz" "$churn" perf "r${round}_${hz}_${churn}"
    steady[$c]+="$R_STEADY "; total[$c]+="$R_TOTAL "; hwm[$c]+="$R_HWM "; rssm[$c]+="$R_RSS "
    bpfns[$c]+="$R_BPF_NS "; bpfrate[$c]+="$R_BPF_RATE "; upload[$c]+="$R_UPLOAD "
    psteady[$c]+="$R_PERF_STEADY "; phwm[$c]+="$R_PERF_HWM "; c15[$c]+="$R_C15 "
    keep_counters "$c"
    awk -v r="$round" -v h="$hz" -v n="$churn" -v s="$R_STEADY" -v t="$R_TOTAL" -v m="$R_HWM" -v q="$R_RSS" \
      -v b="$R_BPF_NS" -v br="$R_BPF_RATE" -v runs="$R_BPF_RUNS" -v u="$R_UPLOAD" -v ps="$R_PERF_STEADY" \
      -v pm="$R_PERF_HWM" 'BEGIN { printf "round %s: %s Hz, %s proc/s: agent steady %.3f%% total %.3f%% of a core, peak %.1f MB, steady %.1f MB; BPF %d ns/sample, %d runs/s, %.3f%%; upload %.1f KB/min; perf %.3f%%, peak %.1f MB\n", r, h, n, s / 1e7, t / 1e7, m / 1024, q / 1024, b, runs, br / 1e7, u / 1024, ps / 1e7, pm / 1024 }' >&2
    echo "  agent: ${R_AGENT_NOTE:-no final line in its log}" >&2
    [[ -z $R_CHURN_NOTE ]] || echo "  churn: $R_CHURN_NOTE" >&2
  done
done

# The start-up measurement.
echo "start-up: starting $IDLE idle processes" >&2
IDLE_PIDS=()
n_sleep=$((IDLE / 2))
n_py=$((IDLE - n_sleep))
: >"$work/idle.ready"
for ((i = 0; i < n_sleep; i++)); do
  sleep $((SECS + 600)) &
  IDLE_PIDS+=($!); LIVE[$!]=1
done
for ((i = 0; i < n_py; i++)); do
  "$PY" -c 'import os, sys, time; os.write(1, b"\n"); time.sleep(float(sys.argv[1]))' $((SECS + 600)) \
    >>"$work/idle.ready" &
  IDLE_PIDS+=($!); LIVE[$!]=1
done
for ((k = 0; k < 3000; k++)); do  # up to 10 min: every sleep exec'd, every python3 past its imports
  ready=0
  for p in "${IDLE_PIDS[@]:0:n_sleep}"; do
    { read -r comm <"/proc/$p/comm"; } 2>/dev/null && [[ $comm == sleep ]] && ready=$((ready + 1))
  done
  mapfile -t lines <"$work/idle.ready"
  ready=$((ready + ${#lines[@]}))
  ((ready < IDLE)) || break
  snooze 0.2
done
((ready >= IDLE)) || die "only $ready of $IDLE idle processes started"
echo "start-up: $IDLE idle processes running" >&2
run_config 19 0 startup startup
stop_pids "${IDLE_PIDS[@]}"
echo "start-up: $IDLE idle processes: agent CPU in its first 15 s $(awk -v c="$R_C15" 'BEGIN {printf "%.3f", c / 1e9}') s, unwind_processes_described ${R_DESCRIBED:-n/a} (last rose at ${R_LAST_RISE} s), steady $(awk -v s="$R_STEADY" 'BEGIN {printf "%.3f", s / 1e7}')% of a core" >&2

echo "Machine: $ncpu CPUs, $(uname -r), $(date -u +%Y-%m-%d); one cpu_split per CPU; $ROUNDS interleaved rounds of ${SECS} s per configuration, steady window ${WARM} s to $((SECS - 1)) s after the agent's start; medians."
echo
echo "| Hz | churn (proc/s) | agent steady CPU (% of one core) | agent CPU incl. start-up (% of one core) | agent peak RSS (MB) | agent steady RSS (MB) | BPF time per sample (ns) | BPF time (% of one core) | upload ($UPLOAD_HOW) | perf steady CPU (% of one core) | perf peak RSS (MB) |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for c in "${configs[@]}"; do
  read -r hz churn <<<"$c"
  awk -v h="$hz" -v n="$churn" -v s="$(median_of "${steady[$c]}")" -v t="$(median_of "${total[$c]}")" \
    -v m="$(median_of "${hwm[$c]}")" -v q="$(median_of "${rssm[$c]}")" -v b="$(median_of "${bpfns[$c]}")" \
    -v br="$(median_of "${bpfrate[$c]}")" -v u="$(median_of "${upload[$c]}")" -v ps="$(median_of "${psteady[$c]}")" \
    -v pm="$(median_of "${phwm[$c]}")" \
    'BEGIN { printf "| %s | %s | %.3f | %.3f | %.1f | %.1f | %d | %.3f | %.1f | %.3f | %.1f |\n", h, n, s / 1e7, t / 1e7, m / 1024, q / 1024, b, br / 1e7, u / 1024, ps / 1e7, pm / 1024 }'
done

echo
echo "Agent counters at the end of each configuration (cumulative since the agent's start, as of its last upload window; medians; n/a: not exposed by this agent)."
echo
echo "| Hz | churn (proc/s) | elf_opens | binary_cache counters | unwind_tables_built | unwind_tables_rebuilt | unwind_tables_freed | symbol_tables_loaded | unwind_processes_described |"
echo "|---|---|---|---|---|---|---|---|---|"
for c in "${configs[@]}"; do
  read -r hz churn <<<"$c"
  row="| $hz | $churn |"
  for n in "${COUNTERS[@]}"; do
    if [[ $n == binary_cache ]]; then
      cell=
      for b in $(printf '%s\n' "${!bc_names[@]}" | sort); do
        [[ -n ${cvals[$c|$b]:-} ]] && cell+="${cell:+, }$b=$(median_of "${cvals[$c|$b]}")"
      done
      row+=" ${cell:-n/a} |"
    elif [[ -n ${cvals[$c|$n]:-} ]]; then
      row+=" $(median_of "${cvals[$c|$n]}") |"
    else
      row+=" n/a |"
    fi
  done
  echo "$row"
done

echo
echo "Start-up with $IDLE idle processes ($n_sleep sleep, $n_py python3) started before the agent, 19 Hz, no churn, no perf, one run of ${SECS} s; the baseline row is the 19 Hz no-churn configuration above (no idle processes, perf alongside). \"Last rose\": the time after the agent's start at which unwind_processes_described last changed on its /metrics, polled every second during the warm-up and every 10 s after it (10 s resolution: counters are published once per upload window)."
echo
echo "| idle processes | agent CPU in its first 15 s (CPU-s) | unwind_processes_described at the end | last rose at (s) | agent steady CPU (% of one core) | agent peak RSS (MB) | agent steady RSS (MB) |"
echo "|---|---|---|---|---|---|---|"
base="19 0"
awk -v c="$(median_of "${c15[$base]}")" -v d="$(median_of "${cvals[$base|unwind_processes_described]:-}")" \
  -v s="$(median_of "${steady[$base]}")" -v m="$(median_of "${hwm[$base]}")" -v q="$(median_of "${rssm[$base]}")" \
  'BEGIN { printf "| 0 (baseline) | %.3f | %s | n/a | %.3f | %.1f | %.1f |\n", c / 1e9, d, s / 1e7, m / 1024, q / 1024 }'
awk -v n="$IDLE" -v c="$R_C15" -v d="${R_DESCRIBED:-n/a}" -v l="$( [[ -n $R_DESCRIBED ]] && echo "$R_LAST_RISE" || echo n/a)" \
  -v s="$R_STEADY" -v m="$R_HWM" -v q="$R_RSS" \
  'BEGIN { printf "| %s | %.3f | %s | %s | %.3f | %.1f | %.1f |\n", n, c / 1e9, d, l, s / 1e7, m / 1024, q / 1024 }'
