#!/usr/bin/env bash
# Benchmark (not a test) of the .eh_frame unwinder:
#  1. BPF time per sample (kernel.bpf_stats_enabled: run_time_ns / run_cnt of
#     ws_cpu_sample, which counts the walk programs it tail-calls) at about 20
#     frames of depth: the kernel's frame-pointer walk on unwind_c_fp vs the
#     .eh_frame unwinder on unwind_c (the same code built -fomit-frame-pointer),
#     and on Debian's python3; then at the unwinder's full 128 frames
#     (unwind_cpp recursing 200 deep); the unwinder with each of its two
#     drivers (bpf_loop, tail_call) on the same kernel; interleaved rounds.
#  2. The unwind-table memory the profiled processes took (rows and pages in
#     the BPF maps), from the profile's counters.
#  3. Table build time and size for large binaries (warpscope-agent unwind-table).
#
#   sudo bench/unwind_bench.sh [ROUNDS=5] [SECONDS=8] [LARGE_BINARY...]
# WS_BENCH_NO_BUILD=1 skips the bootstrap and build (to run an already built
# tree on another machine, e.g. the GPU host).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROUNDS=${1:-5}
SECS=${2:-8}
shift $(( $# >= 2 ? 2 : $# ))
if [[ -z ${WS_BENCH_NO_BUILD:-} ]]; then
  scripts/bootstrap.sh
  scripts/build.sh >/dev/null
fi
AGENT=build/bin/warpscope-agent
P=build/testprogs
work=$(mktemp -d /tmp/ws_unwind_bench.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null || true; echo 0 >/proc/sys/kernel/bpf_stats_enabled; rm -rf "$work"' EXIT
DEPTH=16  # recurse() levels; with burn, main, __libc_start_call_main, __libc_start_main, _start: 21 user frames

counter() {  # $1 = agent log (-v), $2 = counter name
  sed -n "s/.*\] counter $2=//p" "$1" | head -1
}

one_run() {  # $1 = label, $2 = agent flags, rest = workload; prints BPF ns per sample
  local label=$1 flags=$2
  shift 2
  "$@" >/dev/null &
  local prog=$!
  sleep 0.5
  # shellcheck disable=SC2086
  "$AGENT" record --pid "$prog" --duration "$SECS" -F 999 --top 0 -v $flags --output "$work/$label.pb.gz" 2>"$work/$label.log" &
  local agent=$!
  wait "$agent"
  kill "$prog" 2>/dev/null || true
  wait "$prog" 2>/dev/null || true
  # The agent reads its program's run_time_ns / run_cnt (kernel.bpf_stats_enabled).
  awk -v t="$(counter "$work/$label.log" bpf_run_time_ns)" -v c="$(counter "$work/$label.log" bpf_run_count)" \
    'BEGIN { printf "%.0f\n", c ? t / c : 0 }'
}

median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }

echo 1 >/proc/sys/kernel/bpf_stats_enabled
declare -A ns
labels=("fp" "eh_frame" "eh_frame_tail" "python3" "python3_tail" "deep" "deep_tail")
LOOP="--unwinder-driver bpf_loop" TAIL="--unwinder-driver tail_call"
for round in $(seq "$ROUNDS"); do
  for label in "${labels[@]}"; do
    case $label in
      fp) out=$(one_run fp --frame-pointers "$P/unwind_c_fp" 60 recursion $DEPTH) ;;
      eh_frame) out=$(one_run eh_frame "$LOOP" "$P/unwind_c" 60 recursion $DEPTH) ;;
      eh_frame_tail) out=$(one_run eh_frame_tail "$TAIL" "$P/unwind_c" 60 recursion $DEPTH) ;;
      python3) out=$(one_run python3 "$LOOP" /usr/bin/python3 -c "while True: pass") ;;
      python3_tail) out=$(one_run python3_tail "$TAIL" /usr/bin/python3 -c "while True: pass") ;;
      deep) out=$(one_run deep "$LOOP" "$P/unwind_cpp" 60 200) ;;
      deep_tail) out=$(one_run deep_tail "$TAIL" "$P/unwind_cpp" 60 200) ;;
    esac
    echo "round $round: $label: $out ns/sample" >&2
    ns[$label]+="$out "
  done
done

echo "Machine: $(nproc) CPUs, $(uname -r), $(date -u +%Y-%m-%d); $ROUNDS interleaved rounds of ${SECS}s at 999 Hz; medians."
echo
echo "| stack source | driver | workload | BPF ns per sample (whole program: both stacks, hashing, maps) | all rounds |"
echo "|---|---|---|---|---|"
for label in "${labels[@]}"; do
  m=$(tr ' ' '\n' <<<"${ns[$label]}" | grep -v '^$' | median)
  case $label in
    fp) what="kernel frame-pointer walk | - | unwind_c_fp, 21 user frames (built with frame pointers)" ;;
    eh_frame) what=".eh_frame unwinder | bpf_loop | unwind_c, 21 user frames (same code, -fomit-frame-pointer)" ;;
    eh_frame_tail) what=".eh_frame unwinder | tail_call | unwind_c, 21 user frames" ;;
    python3) what=".eh_frame + CPython unwinder | bpf_loop | /usr/bin/python3 busy loop" ;;
    python3_tail) what=".eh_frame + CPython unwinder | tail_call | /usr/bin/python3 busy loop" ;;
    deep) what=".eh_frame unwinder | bpf_loop | unwind_cpp 200 deep: 128 frames (all the unwinder keeps)" ;;
    deep_tail) what=".eh_frame unwinder | tail_call | unwind_cpp 200 deep: 128 frames" ;;
  esac
  echo "| $what | $m | ${ns[$label]} |"
done
echo
echo "Unwind tables held for the profiled process (from the profile counters):"
for label in eh_frame python3; do
  rows=$(counter "$work/$label.log" unwind_rows_used)
  echo "- $label: ${rows:-?} rows = $(( ${rows:-0} * 8 / 1024 )) KiB of rows"
done
echo
echo "Table build for large binaries:"
bins=("$@")
[[ ${#bins[@]} -gt 0 ]] || bins=(/usr/lib/x86_64-linux-gnu/libc.so.6 "$(readlink -f /usr/bin/python3)")
for b in "${bins[@]}"; do "$AGENT" unwind-table "$b" | sed 's/^/- /'; done
