#!/usr/bin/env bash
# Benchmark (not a test) of the CPython unwinder: the extra BPF time
# per sample that Python frames cost. The same workload (workload.py deep: 30
# Python frames, spinning at the bottom) is recorded with the Python walker on
# and with --no-python (native frames only), in interleaved rounds; BPF time
# per sample is run_time_ns / run_cnt of ws_cpu_sample (kernel.bpf_stats_enabled).
#
# With WS_PY_BASELINE_AGENT=<another agent with the Python walker>, that agent
# is measured too in every round (to compare two versions of the walker).
# With WS_BASELINE_AGENT=<an agent built before the Python walker>, it also
# records a non-Python program (testprogs/unwind_c, 21 frames, no frame
# pointers) with both agents, to show that non-Python processes pay nothing.
#
#   sudo bench/python_unwind_bench.sh [ROUNDS=5] [SECONDS=6] [PYTHON...]
# Default interpreters: /usr/bin/python3 plus pyenv's 3.10-3.13 when present.
# WS_PY_AGENTS="label=path ..." adds agents measured with Python frames in
# every round (variants of the walker, side by side).
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

one_run() {  # $1 = label, $2 = python (or "unwind_c"), $3 = agent flags, [$4 = agent]; prints "ns_per_sample frames"
  local label=$1 py=$2 flags=$3 agent=${4:-$AGENT}
  # The workload is pinned to one CPU (and the agent kept off it) so that
  # every run samples the same core: run-to-run noise is mostly placement.
  if [[ $py == unwind_c ]]; then
    taskset -c "$PIN" build/testprogs/unwind_c $((SECS + 5)) recursion 16 >/dev/null &
  else
    taskset -c "$PIN" "$py" "$WORKLOAD" deep $((SECS + 5)) >/dev/null &
  fi
  local prog=$!
  sleep 0.7
  # shellcheck disable=SC2086
  taskset -c "$AGENT_CPUS" "$agent" record --pid "$prog" --duration "$SECS" -F 999 --top 0 -v $flags --output "$work/$label.pb.gz" \
    2>"$work/$label.log"
  kill "$prog" 2>/dev/null || true
  wait "$prog" 2>/dev/null || true
  awk -v t="$(counter "$work/$label.log" bpf_run_time_ns)" -v c="$(counter "$work/$label.log" bpf_run_count)" \
    -v f="$(counter "$work/$label.log" python_frames_resolved)" \
    'BEGIN { printf "%.0f %s\n", c ? t / c : 0, f }'
}

PIN=$(( $(nproc) - 1 ))
AGENT_CPUS=0-$(( PIN > 0 ? PIN - 1 : 0 ))

median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }

echo 1 >/proc/sys/kernel/bpf_stats_enabled
declare -A ns
for round in $(seq "$ROUNDS"); do
  for py in "${PYTHONS[@]}"; do
    modes=(native python)
    [[ -n ${WS_PY_BASELINE_AGENT:-} ]] && modes+=(python_base)
    for extra in ${WS_PY_AGENTS:-}; do modes+=("${extra%%=*}"); done
    for mode in "${modes[@]}"; do
      flags=""
      [[ $mode == native ]] && flags="--no-python"
      agent=$AGENT
      [[ $mode == python_base ]] && agent=$WS_PY_BASELINE_AGENT
      for extra in ${WS_PY_AGENTS:-}; do [[ $mode == "${extra%%=*}" ]] && agent=${extra#*=}; done
      read -r out frames < <(one_run "$mode" "$py" "$flags" "$agent")
      echo "round $round: $py $mode: $out ns/sample (python frames resolved: ${frames:-0})" >&2
      ns["$py|$mode"]+="$out "
    done
  done
  if [[ -n ${WS_BASELINE_AGENT:-} ]]; then
    read -r before _ < <(one_run base unwind_c "" "$WS_BASELINE_AGENT")
    ns["base"]+="$before "
    read -r out _ < <(one_run new unwind_c "")
    ns["new"]+="$out "
    echo "round $round: unwind_c: before $before after $out ns/sample" >&2
  fi
done

echo "Machine: $(nproc) CPUs, $(uname -r), $(date -u +%Y-%m-%d); $ROUNDS interleaved rounds of ${SECS}s at 999 Hz; medians."
echo "Workload: $WORKLOAD deep (30 Python frames)."
echo
echo "| interpreter | native frames only (--no-python), ns/sample | with Python frames, ns/sample | extra per sample (median of per-round differences) | all rounds (native / python) |"
echo "|---|---|---|---|---|"
for py in "${PYTHONS[@]}"; do
  n=$(tr ' ' '\n' <<<"${ns[$py|native]}" | grep -v '^$' | median)
  p=$(tr ' ' '\n' <<<"${ns[$py|python]}" | grep -v '^$' | median)
  version=$("$py" -c 'import platform; print(platform.python_version())')
  d=$(paste -d' ' <(tr ' ' '\n' <<<"${ns[$py|python]}" | grep -v '^$') <(tr ' ' '\n' <<<"${ns[$py|native]}" | grep -v '^$') |
      awk '{print $1 - $2}' | median | awk '{printf "%+.0f", $1}')
  echo "| $py ($version) | $n | $p | $d ns | ${ns[$py|native]}/ ${ns[$py|python]}|"
  if [[ -n ${WS_PY_BASELINE_AGENT:-} ]]; then
    b=$(tr ' ' '\n' <<<"${ns[$py|python_base]}" | grep -v '^$' | median)
    d=$(paste -d' ' <(tr ' ' '\n' <<<"${ns[$py|python_base]}" | grep -v '^$') <(tr ' ' '\n' <<<"${ns[$py|native]}" | grep -v '^$') |
        awk '{print $1 - $2}' | median | awk '{printf "%+.0f", $1}')
    echo "| $py with $WS_PY_BASELINE_AGENT | $n | $b | $d ns | ${ns[$py|native]}/ ${ns[$py|python_base]}|"
  fi
  for extra in ${WS_PY_AGENTS:-}; do
    label=${extra%%=*}
    b=$(tr ' ' '\n' <<<"${ns[$py|$label]}" | grep -v '^$' | median)
    d=$(paste -d' ' <(tr ' ' '\n' <<<"${ns[$py|$label]}" | grep -v '^$') <(tr ' ' '\n' <<<"${ns[$py|native]}" | grep -v '^$') |
        awk '{print $1 - $2}' | median | awk '{printf "%+.0f", $1}')
    echo "| $py with $label | $n | $b | $d ns | ${ns[$py|native]}/ ${ns[$py|$label]}|"
  done
done
if [[ -n ${WS_BASELINE_AGENT:-} ]]; then
  b=$(tr ' ' '\n' <<<"${ns[base]}" | grep -v '^$' | median)
  a=$(tr ' ' '\n' <<<"${ns[new]}" | grep -v '^$' | median)
  echo
  echo "| non-Python process (unwind_c, 21 frames) | agent before the Python walker, ns/sample | this agent, ns/sample | all rounds (before / this) |"
  echo "|---|---|---|---|"
  echo "| build/testprogs/unwind_c | $b | $a | ${ns[base]}/ ${ns[new]}|"
fi
