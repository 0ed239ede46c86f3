# Helpers shared by the agent benchmarks (bench/*.sh source this). They
# start no processes of their own where the measurement could see them:
# sleeping, timing and reading /proc are bash builtins.
#
# The sourcing script sets `work` (its temporary directory) and calls
# bench_init; `LIVE` (an associative array) holds every process it started
# and has not stopped yet. On exit, Ctrl-C or failure, every live process is
# stopped, kernel.bpf_stats_enabled is set back to 0, `work` is removed, and
# bench_cleanup_extra runs first if the script defines it.
declare -gA LIVE
CLK_TCK=$(getconf CLK_TCK)

bench_cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  stop_pids "${!LIVE[@]}"
  if declare -F bench_cleanup_extra >/dev/null; then bench_cleanup_extra; fi
  echo 0 >/proc/sys/kernel/bpf_stats_enabled || true
  rm -rf "$work"
  exit "$rc"
}

bench_init() {
  trap bench_cleanup EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  mkfifo "$work/snooze"
  exec {SNOOZE}<>"$work/snooze"
}

# Sleeps without starting a process: a read with a timeout on a FIFO that no
# one writes (bench_init first).
snooze() { read -r -t "$1" -u "$SNOOZE" _ || true; }
now_us() { REPLY=${EPOCHREALTIME//[!0-9]/}; }
wait_until() {  # $1 = time in µs since the epoch
  local d
  now_us
  d=$(($1 - REPLY))
  if ((d > 0)); then
    printf -v d '%d.%06d' $((d / 1000000)) $((d % 1000000))
    snooze "$d"
  fi
}

stop_pids() {  # SIGTERM the live ones among the pids and their children; SIGKILL what is left after 15 s
  local p live=() kids=() i
  for p; do
    unset "LIVE[$p]"
    kill -0 "$p" 2>/dev/null && live+=("$p")
  done
  ((${#live[@]})) || return 0
  mapfile -t kids < <(pgrep -P "$(IFS=,; echo "${live[*]}")" || true)
  kill -TERM "${live[@]}" "${kids[@]}" 2>/dev/null || true
  for ((i = 0; i < 75; i++)); do
    local left=()
    for p in "${live[@]}" "${kids[@]}"; do kill -0 "$p" 2>/dev/null && left+=("$p"); done
    ((${#left[@]})) || break
    snooze 0.2
  done
  for p in "${live[@]}" "${kids[@]}"; do kill -0 "$p" 2>/dev/null && kill -KILL "$p" 2>/dev/null; done
  for p in "${live[@]}"; do wait "$p" 2>/dev/null || true; done
}

wait_gone() {  # $1 = pid, $2 = seconds: 0 once it has exited (and is reaped), 1 if still there
  local i
  for ((i = 0; i < $2 * 5; i++)); do
    kill -0 "$1" 2>/dev/null || { wait "$1" 2>/dev/null || true; unset "LIVE[$1]"; return 0; }
    snooze 0.2
  done
  return 1
}

die() {  # $1 = message, then log files whose tails help
  echo "error: $1" >&2
  shift
  for f; do [[ -f $f ]] && { echo "--- $f" >&2; tail -n 20 "$f" >&2; }; done
  exit 1
}

oncpu_ns() {  # $1 = pid; REPLY: on-CPU ns summed over its live threads
  local f a s=0
  for f in /proc/"$1"/task/*/schedstat; do
    { read -r a _ <"$f"; } 2>/dev/null && s=$((s + a))
  done
  REPLY=$s
}

cputime_ns() {  # $1 = pid; REPLY: user+system ns of the whole process, exited threads included
  local line f
  { read -r line <"/proc/$1/stat"; } 2>/dev/null || { REPLY=0; return; }
  read -r -a f <<<"${line##*) }"
  REPLY=$(((f[11] + f[12]) * 1000000000 / CLK_TCK))
}

status_kb() {  # $1 = pid, $2 = field of /proc/PID/status (VmRSS, VmHWM); REPLY in KB, 0 if gone
  local k v
  REPLY=0
  { while read -r k v _; do
      if [[ $k == "$2:" ]]; then REPLY=$v; break; fi
    done <"/proc/$1/status"; } 2>/dev/null || true
}

http_get() {  # $1 = port, $2 = path; the answer's body in HTTP_BODY; 1 if nothing listens
  local fd line body='' in_body=''
  { exec {fd}<>"/dev/tcp/127.0.0.1/$1"; } 2>/dev/null || return 1
  printf 'GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n' "$2" >&"$fd"
  while IFS= read -r -t 5 -u "$fd" line || [[ -n $line ]]; do
    line=${line%$'\r'}
    if [[ -n $in_body ]]; then body+=$line$'\n'; elif [[ -z $line ]]; then in_body=1; fi
  done
  exec {fd}>&-
  HTTP_BODY=$body
}


# Run time of the BPF programs named $2... that process $1 holds (other agents
# or tests on the machine load programs of the same names): bpftool names the
# programs, the process's /proc/PID/fdinfo says which it holds and their
# run_time_ns, run_cnt. REPLY: "run_time_ns run_cnt", summed; needs
# kernel.bpf_stats_enabled=1 to be other than 0.
bpf_prog_stats() {
  local pid=$1 ids f k v id t T=0 C=0 seen=" " names
  shift
  names=" $* "
  ids=" $(bpftool prog show -j 2>/dev/null | tr '}' '\n' |
    awk -v names="$names" 'match($0, /"name":"[A-Za-z0-9_]+"/) {
        n = substr($0, RSTART + 8, RLENGTH - 9)
        if (index(names, " " n " ") && match($0, /"id":[0-9]+/)) printf "%s ", substr($0, RSTART + 5, RLENGTH - 5)
      }' || true)"
  for f in /proc/"$pid"/fdinfo/*; do
    id='' t=''
    { while read -r k v; do
        case $k in
          prog_id:) id=$v ;;
          run_time_ns:) t=$v ;;
          run_cnt:)
            if [[ -n $id && -n $t && $ids == *" $id "* && $seen != *" $id "* ]]; then
              seen+="$id "; T=$((T + t)); C=$((C + v))
            fi
            break ;;
        esac
      done <"$f"; } 2>/dev/null || true
  done
  REPLY="$T $C"
}

declare -gA CNT
read_counters() {  # $1 = metrics port; the agent's event counters into CNT (empty if /metrics does not answer)
  local line re='^warpscope_agent_events_total\{.*event="([A-Za-z0-9_:.]+)".*\} ([0-9.eE+]+)$'
  CNT=()
  http_get "$1" /metrics || return 0
  while IFS= read -r line; do
    if [[ $line =~ $re ]]; then CNT[${BASH_REMATCH[1]}]=${BASH_REMATCH[2]}; fi
  done <<<"$HTTP_BODY"
}

median() { sort -g | awk '{a[NR]=$1} END {if (NR == 0) print "n/a"; else print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
median_of() { tr ' ' '\n' <<<"$1" | { grep -v '^$' || true; } | median; }
