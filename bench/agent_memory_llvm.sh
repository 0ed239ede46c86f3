#!/usr/bin/env bash
# The agent's memory beside a real large library (not a test): a python3 that
# maps Debian's libLLVM-15 (117 MB, 46,000 dynamic symbols, 5 MB of
# .eh_frame) and spends SECS seconds creating and disposing LLVM contexts,
# while BUILD's agent and, side by side, BEFORE's (when given) profile the
# host. Prints each agent's peak (VmHWM, reset as the workload starts) and
# its RSS at the end.
#   sudo [BEFORE=OLD_BUILD] [BUILD=build] [SECS=40] bench/agent_memory_llvm.sh
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
SECS=${SECS:-40}
BUILD=$(cd "${BUILD:-$HERE/../build}" && pwd)
[[ -e /usr/lib/x86_64-linux-gnu/libLLVM-15.so.1 ]] || { echo "needs Debian's libllvm15" >&2; exit 1; }
work=$(mktemp -d)
source "$HERE/lib/agent_bench.sh"
bench_init  # on exit: SIGTERM to every process in LIVE, waited for, then $work removed
read -r SPORT < <(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$BUILD/bin/warpscope-server" --listen "127.0.0.1:$SPORT" --data-dir "$work/data" 2> "$work/server.log" &
LIVE[$!]=1
sleep 1
declare -A AGENTS
start() {  # NAME BUILD_DIR
  "$2/bin/warpscope-agent" run --server "http://127.0.0.1:$SPORT" --state-dir "$work/$1" --no-gpu-metrics \
    --no-gpu-time 2> "$work/$1.log" &
  LIVE[$!]=1
  AGENTS[$1]=$!
}
[[ -n ${BEFORE:-} ]] && start before "$(cd "$BEFORE" && pwd)"
start current "$BUILD"
sleep 6
for a in "${!AGENTS[@]}"; do echo 5 > "/proc/${AGENTS[$a]}/clear_refs"; done
python3 -c '
import ctypes, sys, time
l = ctypes.CDLL("libLLVM-15.so.1")
create, dispose = l.LLVMContextCreate, l.LLVMContextDispose
create.restype = ctypes.c_void_p
dispose.argtypes = [ctypes.c_void_p]
t = time.time()
while time.time() - t < float(sys.argv[1]):
    dispose(create())
' "$SECS" &
LIVE[$!]=1
wait $!
for a in before current; do
  [[ -n ${AGENTS[$a]:-} ]] || continue
  printf '%-8s peak %6.1f MB, RSS at the end %6.1f MB\n' "$a" \
    "$(awk '/^VmHWM/ {print $2 * 1.024 / 1000}' "/proc/${AGENTS[$a]}/status")" \
    "$(awk '/^VmRSS/ {print $2 * 1.024 / 1000}' "/proc/${AGENTS[$a]}/status")"
done
