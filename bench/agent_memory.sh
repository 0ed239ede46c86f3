#!/usr/bin/env bash
# The agent's memory beside big binaries (not a test). For each N, an
# executable with N functions (bench/lib/gen_big_binary.py: its .eh_frame,
# .symtab and .strtab grow linearly with N, 211 MB at 1,000,000) spins for
# SECS seconds while fresh agents profile the host: BUILD's (default build/),
# and side by side BEFORE's when BEFORE names an older build directory; one
# server on loopback (its embedded store in a temporary directory) takes their
# uploads for the whole run. Each
# agent's RSS is read once it has been up 5 s (before), every 0.5 s while the
# binary runs (steady: the median of the last 10 s), and its peak is its own
# VmHWM, reset as the binary starts so that the agent's start does not count.
# Prints one row per N and agent, the after/before ratios, how much each
# agent's peak grows from the smallest N to the largest, and the cache gauges
# and symbol-table bytes each agent exports on /metrics.
#   sudo [BEFORE=OLD_BUILD] [BUILD=build] [SECS=40] bench/agent_memory.sh [N...]
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
NS=("$@"); ((${#NS[@]})) || NS=(100000 1000000)
SECS=${SECS:-40}
BUILD=$(cd "${BUILD:-$HERE/../build}" && pwd)
NAMES=(current); declare -A DIRS=([current]=$BUILD)
if [[ -n ${BEFORE:-} ]]; then NAMES=(before current); DIRS[before]=$(cd "$BEFORE" && pwd); fi
for a in "${NAMES[@]}"; do [[ -x ${DIRS[$a]}/bin/warpscope-agent ]] || { echo "no ${DIRS[$a]}/bin/warpscope-agent" >&2; exit 1; }; done

work=$(mktemp -d)
source "$HERE/lib/agent_bench.sh"
bench_init  # on exit: SIGTERM to every process in LIVE, waited for, then $work removed

free_ports() {  # $1 = how many; loopback ports free now, all different (held open together)
  python3 -c 'import socket, sys
s = [socket.socket() for _ in range(int(sys.argv[1]))]
for x in s: x.bind(("127.0.0.1", 0))
print(" ".join(str(x.getsockname()[1]) for x in s))' "$1"
}
mb() { awk -v k="$1" 'BEGIN {printf "%.1f", k * 1.024 / 1000}'; }  # kB -> MB
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (b > 0) printf "%.2f", a / b; else print "n/a"}'; }

read -r SPORT < <(free_ports 1)
"$BUILD/bin/warpscope-server" --listen "127.0.0.1:$SPORT" --data-dir "$work/data" 2> "$work/server.log" &
LIVE[$!]=1
for ((i = 0; i < 50; i++)); do curl -sf "http://127.0.0.1:$SPORT/healthz" >/dev/null && break; snooze 0.2; done
((i < 50)) || die "the server did not answer /healthz" "$work/server.log"

declare -A PID PORT BEFORE_KB PEAK_KB STEADY_KB METRICS BIN_MB
for n in "${NS[@]}"; do
  bin=$work/big-$n
  if [[ ! -x $bin ]]; then
    echo "generating $n functions..." >&2
    python3 "$HERE/lib/gen_big_binary.py" "$n" "$bin" > "$work/gen-$n.log" || die "gen_big_binary.py failed" "$work/gen-$n.log"
    grep -E '^/| \.(eh_frame|eh_frame_hdr|symtab|strtab) ' "$work/gen-$n.log" >&2
  fi
  BIN_MB[$n]=$(awk -v b="$(stat -c %s "$bin")" 'BEGIN {printf "%.1f", b / 1e6}')

  read -r -a ports < <(free_ports "${#NAMES[@]}")
  for i in "${!NAMES[@]}"; do
    a=${NAMES[$i]}; PORT[$a]=${ports[$i]}
    "${DIRS[$a]}/bin/warpscope-agent" run --server "http://127.0.0.1:$SPORT" --state-dir "$work/$a-$n" \
      --no-gpu-metrics --no-gpu-time --metrics-listen "127.0.0.1:${PORT[$a]}" 2> "$work/$a-$n.log" &
    PID[$a]=$!; LIVE[$!]=1
  done
  snooze 5
  for a in "${NAMES[@]}"; do
    # $! is the agent itself (bash execs it in the forked child): the VmHWM read below is its own.
    [[ $(readlink "/proc/${PID[$a]}/exe" 2>/dev/null) == */warpscope-agent ]] || die "the $a agent is not running" "$work/$a-$n.log"
    for ((i = 0; i < 50; i++)); do curl -sf "http://127.0.0.1:${PORT[$a]}/metrics" >/dev/null && break; snooze 0.2; done
    ((i < 50)) || die "the $a agent's /metrics does not answer" "$work/$a-$n.log"
  done
  declare -A SAMPLES=()
  for a in "${NAMES[@]}"; do
    status_kb "${PID[$a]}" VmRSS; BEFORE_KB[$n,$a]=$REPLY
    echo 5 > "/proc/${PID[$a]}/clear_refs"  # VmHWM := VmRSS now
  done

  echo "N=$n: the binary runs for $SECS s..." >&2
  "$bin" &
  BIG=$!; LIVE[$BIG]=1
  now_us; t0=$REPLY
  for ((i = 1; i <= SECS * 2; i++)); do
    wait_until $((t0 + i * 500000))
    kill -0 "$BIG" 2>/dev/null || die "the big binary exited"
    for a in "${NAMES[@]}"; do
      kill -0 "${PID[$a]}" 2>/dev/null || die "the $a agent exited" "$work/$a-$n.log"
      status_kb "${PID[$a]}" VmRSS; SAMPLES[$a]+="$REPLY "
    done
  done
  for a in "${NAMES[@]}"; do
    status_kb "${PID[$a]}" VmHWM; PEAK_KB[$n,$a]=$REPLY
    read -r -a s <<< "${SAMPLES[$a]}"
    last=$((${#s[@]} < 20 ? ${#s[@]} : 20))  # the last 10 s
    STEADY_KB[$n,$a]=$(median_of "${s[*]: -$last}")
    METRICS[$n,$a]=$(curl -s "http://127.0.0.1:${PORT[$a]}/metrics" |
      grep -E '^warpscope_agent_cache_bytes|^warpscope_agent_events_total\{.*event="symbol_table_bytes"' || true)
  done
  stop_pids "$BIG" "${PID[@]}"
  unset SAMPLES
done

# The table, then the gauges.
echo
echo "agent memory beside a binary with N functions (${SECS} s each; MB = 10^6 bytes)"
printf '%-9s %-9s %10s %12s %12s %12s\n' N agent "binary MB" "RSS before" "peak RSS" "steady RSS"
for n in "${NS[@]}"; do
  for a in "${NAMES[@]}"; do
    printf '%-9s %-9s %10s %12s %12s %12s\n' "$n" "$a" "${BIN_MB[$n]}" "$(mb "${BEFORE_KB[$n,$a]}")" \
      "$(mb "${PEAK_KB[$n,$a]}")" "$(mb "${STEADY_KB[$n,$a]}")"
  done
  if [[ -n ${BEFORE:-} ]]; then
    printf '%-9s %-9s %10s %12s %12s %12s\n' "$n" "cur/bef" "" "$(ratio "${BEFORE_KB[$n,current]}" "${BEFORE_KB[$n,before]}")" \
      "$(ratio "${PEAK_KB[$n,current]}" "${PEAK_KB[$n,before]}")" "$(ratio "${STEADY_KB[$n,current]}" "${STEADY_KB[$n,before]}")"
  fi
done
lo=$(printf '%s\n' "${NS[@]}" | sort -n | head -1); hi=$(printf '%s\n' "${NS[@]}" | sort -n | tail -1)
if ((lo != hi)); then
  echo
  echo "peak RSS at N=$hi / peak RSS at N=$lo (binary $(ratio "${BIN_MB[$hi]}" "${BIN_MB[$lo]}")x larger):"
  for a in "${NAMES[@]}"; do
    printf '  %-9s %s\n' "$a" "$(ratio "${PEAK_KB[$hi,$a]}" "${PEAK_KB[$lo,$a]}")"
  done
fi
echo
echo "/metrics at the end of each run:"
for n in "${NS[@]}"; do
  for a in "${NAMES[@]}"; do
    echo "  N=$n $a:"
    sed 's/^/    /' <<< "${METRICS[$n,$a]:-(none)}"
  done
done
