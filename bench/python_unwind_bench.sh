#!/usr/bin/env bash
# Benchmark (not a test) of the CPython unwinder, issue 4: the extra BPF time
# per sample that Python frames cost. The same workload (workload.py deep: 30
# Python frames, spinning at the bottom) is recorded with the Python walker on
# and with --no-python (native frames only), in interleaved rounds; BPF time
# per sample is run_time_ns / run_cnt of ws_cpu_sample (kernel.bpf_stats_enabled).
#
#   sudo bench/python_unwind_bench.sh [ROUNDS=5] [SECONDS=6] [PYTHON...]
# Default interpreters: /usr/bin/python3 plus pyenv's 3.10-3.13 when present.
# WS_BENCH_NO_BUILD=1 skips the bootstrap and build (an already built tree on
# another machine, e.g. the GPU host).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROUNDS=${1:-5}
SECS=${2:-6}
shift $(( $# >= 2 ? 2 : $# ))
if [[ -z ${WS_BENCH_NO_BUILD:-} ]]; then
  scripts/bootstrap.sh
  scripts/build.sh >/dev/null
fi
AGENT=build/bin/warpscope-agent
WORKLOAD=tests/testprogs/python/workload.py
PYTHONS=("$@")
if [[ ${#PYTHONS[@]} -eq 0 ]]; then
  PYTHONS=(/usr/bin/python3)
  for v in 3.10 3.11 3.12 3.13; do
    for p in /root/.pyenv/versions/$v.*/bin/python$v; do [[ -x $p ]] && PYTHONS+=("$p"); done
  done
fi
work=$(mktemp -d /tmp/ws_python_bench.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null || true; echo 0 >/proc/sys/kernel/bpf_stats_enabled; rm -rf "$work"' EXIT

counter() {  # $1 = agent log (-v), $2 = counter name
  sed -n "s/.*\] counter $2=//p" "$1" | head -1
}

one_run() {  # $1 = label, $2 = python, $3 = agent flags; prints "ns_per_sample python_frames_share"
  local label=$1 py=$2 flags=$3
  "$py" "$WORKLOAD" deep $((SECS + 5)) >/dev/null &
  local prog=$!
  sleep 0.7
  # shellcheck disable=SC2086
  "$AGENT" record --pid "$prog" --duration "$SECS" -F 999 --top 0 -v $flags --output "$work/$label.pb.gz" \
    2>"$work/$label.log"
  kill "$prog" 2>/dev/null || true
  wait "$prog" 2>/dev/null || true
  awk -v t="$(counter "$work/$label.log" bpf_run_time_ns)" -v c="$(counter "$work/$label.log" bpf_run_count)" \
    -v f="$(counter "$work/$label.log" python_frames_resolved)" \
    'BEGIN { printf "%.0f %s\n", c ? t / c : 0, f }'
}

median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }

echo 1 >/proc/sys/kernel/bpf_stats_enabled
declare -A ns
for round in $(seq "$ROUNDS"); do
  for py in "${PYTHONS[@]}"; do
    for mode in native python; do
      flags=""
      [[ $mode == native ]] && flags="--no-python"
      read -r out frames < <(one_run "$mode" "$py" "$flags")
      echo "round $round: $py $mode: $out ns/sample (python frames resolved: ${frames:-0})" >&2
      ns["$py|$mode"]+="$out "
    done
  done
done

echo "Machine: $(nproc) CPUs, $(uname -r), $(date -u +%Y-%m-%d); $ROUNDS interleaved rounds of ${SECS}s at 999 Hz; medians."
echo "Workload: $WORKLOAD deep (30 Python frames)."
echo
echo "| interpreter | native frames only (--no-python), ns/sample | with Python frames, ns/sample | extra per sample | all rounds (native / python) |"
echo "|---|---|---|---|---|"
for py in "${PYTHONS[@]}"; do
  n=$(tr ' ' '\n' <<<"${ns[$py|native]}" | grep -v '^$' | median)
  p=$(tr ' ' '\n' <<<"${ns[$py|python]}" | grep -v '^$' | median)
  version=$("$py" -c 'import platform; print(platform.python_version())')
  echo "| $py ($version) | $n | $p | $(awk -v a="$p" -v b="$n" 'BEGIN { printf "%+.0f ns", a - b }') | ${ns[$py|native]}/ ${ns[$py|python]}|"
done
