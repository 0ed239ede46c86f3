#!/usr/bin/env bash
# Benchmark (not a test) of the .eh_frame unwinder, issue 3:
#  1. BPF time per sample (kernel.bpf_stats_enabled: run_time_ns / run_cnt of
#     ws_cpu_sample) at about 20 frames of depth: the kernel's frame-pointer
#     walk on unwind_c_fp vs the .eh_frame unwinder on unwind_c (the same code
#     built -fomit-frame-pointer), and on Debian's python3; interleaved rounds.
#  2. The unwind-table memory the profiled processes took (rows and pages in
#     the BPF maps), from the profile's counters.
#  3. Table build time and size for large binaries (warpscope-agent unwind-table).
#
#   sudo bench/unwind_bench.sh [ROUNDS=3] [SECONDS=8] [LARGE_BINARY...]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROUNDS=${1:-3}
SECS=${2:-8}
shift $(( $# >= 2 ? 2 : $# ))
scripts/bootstrap.sh
scripts/build.sh >/dev/null
AGENT=build/bin/warpscope-agent
P=build/testprogs
work=$(mktemp -d /tmp/ws_unwind_bench.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null || true; sysctl -qw kernel.bpf_stats_enabled=0; rm -rf "$work"' EXIT
DEPTH=16  # recurse() levels; with burn, main and libc's start frames: ~21 frames

prog_stats() {  # prints "run_time_ns run_cnt" of ws_cpu_sample
  bpftool prog show -j | tr '}' '\n' | grep '"name":"ws_cpu_sample"' |
    sed -n 's/.*"run_time_ns":\([0-9]*\),"run_cnt":\([0-9]*\).*/\1 \2/p' | head -1
}

one_run() {  # $1 = label, $2 = agent flags, rest = workload; prints "ns_per_sample avg_user_frames"
  local label=$1 flags=$2
  shift 2
  "$@" >/dev/null &
  local prog=$!
  sleep 0.3
  # shellcheck disable=SC2086
  "$AGENT" record --pid "$prog" --duration "$SECS" -F 999 --top 0 $flags --output "$work/$label.pb.gz" 2>"$work/$label.log" &
  local agent=$!
  sleep 2
  read -r t0 c0 < <(prog_stats)
  sleep $((SECS - 3))
  read -r t1 c1 < <(prog_stats)
  wait "$agent"
  kill "$prog" 2>/dev/null || true
  wait "$prog" 2>/dev/null || true
  local frames
  frames=$(HOME=$work GOCACHE=$work/go go tool pprof -traces "$work/$label.pb.gz" 2>/dev/null |
    awk '/-----------/ { if (n) { s += n; k++ }; n = 0; next } /^ +[0-9.]+[mun]?s / { n = 1; next } NF { n++ }
         END { if (n) { s += n; k++ }; printf "%.1f", k ? s / k : 0 }')
  awk -v a="$t0" -v b="$t1" -v c="$c0" -v d="$c1" -v f="$frames" 'BEGIN { printf "%.0f %s\n", (b - a) / (d - c), f }'
}

median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }

sysctl -qw kernel.bpf_stats_enabled=1
declare -A ns frames
labels=("fp" "eh_frame" "python3")
for round in $(seq "$ROUNDS"); do
  for label in "${labels[@]}"; do
    case $label in
      fp) out=$(one_run fp --frame-pointers "$P/unwind_c_fp" 60 recursion $DEPTH) ;;
      eh_frame) out=$(one_run eh_frame "" "$P/unwind_c" 60 recursion $DEPTH) ;;
      python3) out=$(one_run python3 "" /usr/bin/python3 -c "while True: pass") ;;
    esac
    read -r n f <<<"$out"
    echo "round $round: $label: $n ns/sample, $f frames/stack (incl. kernel)" >&2
    ns[$label]+="$n "; frames[$label]+="$f "
  done
done

echo "Machine: $(nproc) CPUs, $(uname -r), $(date -u +%Y-%m-%d); $ROUNDS interleaved rounds of ${SECS}s at 999 Hz; medians."
echo
echo "| stack source | workload | BPF ns per sample (whole program) | frames per stack |"
echo "|---|---|---|---|"
for label in "${labels[@]}"; do
  m=$(tr ' ' '\n' <<<"${ns[$label]}" | grep -v '^$' | median)
  f=$(tr ' ' '\n' <<<"${frames[$label]}" | grep -v '^$' | median)
  case $label in
    fp) what="kernel frame-pointer walk | unwind_c_fp (built with frame pointers)" ;;
    eh_frame) what=".eh_frame unwinder | unwind_c (same code, -fomit-frame-pointer)" ;;
    python3) what=".eh_frame unwinder | /usr/bin/python3 busy loop" ;;
  esac
  echo "| $what | $m | $f |"
done
echo
echo "Unwind tables held for the profiled process (from the profile counters):"
for label in eh_frame python3; do
  rows=$(HOME=$work GOCACHE=$work/go go tool pprof -comments "$work/$label.pb.gz" 2>/dev/null | sed -n 's/^unwind_rows_used=//p')
  echo "- $label: ${rows:-?} rows = $(( ${rows:-0} * 8 / 1024 )) KiB of rows"
done
echo
echo "Table build for large binaries:"
bins=("$@")
[[ ${#bins[@]} -gt 0 ]] || bins=(/usr/lib/x86_64-linux-gnu/libc.so.6 "$(readlink -f /usr/bin/python3)")
for b in "${bins[@]}"; do "$AGENT" unwind-table "$b" | sed 's/^/- /'; done
