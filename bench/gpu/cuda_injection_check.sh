#!/usr/bin/env bash
# GPU host check of libwarpscope_cuda.so against real CUDA/CUPTI (not a test):
#   bench/gpu/cuda_injection_check.sh DIR [ROUNDS] [SECONDS]
# DIR holds bin/{ws_cuda_listen,ws_cuda_kernels,warpscope-agent} and
# lib/libwarpscope_cuda.so (build here, carry over). Writes to $OUT (or /tmp).
#  1. ws_cuda_kernels (known kernels) with the stand-in agent ws_cuda_listen:
#     per-name counts, which correlation id kernels carry, drops.
#  1b. the same in duty mode with callbacks off between windows (50/1000 ms):
#     the time-scaled counts against what was launched.
#  2. bench/gpu/launch_heavy.py, ROUNDS interleaved rounds (order rotating) of
#     $CONFIGS: none (no library), dormant (library, no agent), exact, duty
#     (100/1000 ms, callbacks always on), duty_cb (50/1000 ms, callbacks only
#     in the windows), torch_profiler (CPU + CUDA activities).
#  3. warpscope-agent probe-stack on the library's probe function inside the
#     PyTorch loop: the launch stacks with their Python frames.
set -u
DIR=$(cd "$1" && pwd); ROUNDS=${2:-4}; SECS=${3:-6}
OUT=${OUT:-/tmp}
PY=${PY:-/opt/torch/.venv/bin/python3}
LIB=$DIR/lib/libwarpscope_cuda.so
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export LD_LIBRARY_PATH=$DIR/lib
CUDA_LIBS=/usr/local/cuda/lib64

echo "== 1. known kernels"
"$DIR/bin/ws_cuda_listen" --socket /tmp/ws-k.sock --rate 200 --memcpy --print-kernels 8 > "$OUT/listen_kernels.txt" 2>&1 &
L=$!
sleep 0.5
WARPSCOPE_AGENT_SOCKET=/tmp/ws-k.sock CUDA_INJECTION64_PATH=$LIB LD_LIBRARY_PATH=$CUDA_LIBS:$DIR/lib \
  "$DIR/bin/ws_cuda_kernels" 5 2>&1 | tee "$OUT/kernels_run.txt"
sleep 6
kill $L; wait $L 2>/dev/null
tail -30 "$OUT/listen_kernels.txt"

echo "== 1b. known kernels, duty mode with callbacks off between windows (50 of every 1000 ms)"
"$DIR/bin/ws_cuda_listen" --socket /tmp/ws-kd.sock --mode duty --duty-callbacks --duty-on 50 --duty-period 1000 \
  --rate 200 --print-kernels 0 > "$OUT/listen_kernels_duty.txt" 2>&1 &
L=$!
sleep 0.5
WARPSCOPE_AGENT_SOCKET=/tmp/ws-kd.sock CUDA_INJECTION64_PATH=$LIB LD_LIBRARY_PATH=$CUDA_LIBS:$DIR/lib \
  "$DIR/bin/ws_cuda_kernels" 10 2>&1 | tee "$OUT/kernels_run_duty.txt"
sleep 6
kill $L; wait $L 2>/dev/null
tail -8 "$OUT/listen_kernels_duty.txt"

echo "== 2. launch-heavy loop, $ROUNDS interleaved rounds of $SECS s"
rm -f "$OUT/loop_stderr.txt"
"$DIR/bin/ws_cuda_listen" --socket /tmp/ws-exact.sock --mode exact --rate 200 --print-kernels 0 > "$OUT/listen_exact.txt" 2>&1 &
LE=$!
"$DIR/bin/ws_cuda_listen" --socket /tmp/ws-duty.sock --mode duty --rate 200 --print-kernels 0 > "$OUT/listen_duty.txt" 2>&1 &
LD=$!
"$DIR/bin/ws_cuda_listen" --socket /tmp/ws-dutycb.sock --mode duty --duty-callbacks --duty-on 50 --duty-period 1000 \
  --rate 200 --print-kernels 0 > "$OUT/listen_dutycb.txt" 2>&1 &
LDC=$!
sleep 0.5
run() {  # config name, env...
  local name=$1; shift
  local r
  r=$(env "$@" "$PY" "$HERE/launch_heavy.py" "$SECS" 2>>"$OUT/loop_stderr.txt" | awk '/it_per_s/ {print $2}')
  echo "$name $r" | tee -a "$OUT/loop_results.txt"
}
: > "$OUT/loop_results.txt"
read -r -a configs <<< "${CONFIGS:-none dormant exact duty duty_cb torch_profiler}"
run_config() {
  case $1 in
    none) run none WS_X=1 ;;
    dormant) run dormant CUDA_INJECTION64_PATH=$LIB WARPSCOPE_AGENT_SOCKET=/tmp/ws-nobody.sock ;;
    exact) run exact CUDA_INJECTION64_PATH=$LIB WARPSCOPE_AGENT_SOCKET=/tmp/ws-exact.sock ;;
    duty) run duty CUDA_INJECTION64_PATH=$LIB WARPSCOPE_AGENT_SOCKET=/tmp/ws-duty.sock ;;
    duty_cb) run duty_cb CUDA_INJECTION64_PATH=$LIB WARPSCOPE_AGENT_SOCKET=/tmp/ws-dutycb.sock ;;
    torch_profiler) run torch_profiler WS_TORCH_PROFILER=1 ;;
  esac
}
for round in $(seq "$ROUNDS"); do
  echo "round $round" >> "$OUT/loop_stderr.txt"
  # The order rotates each round, so no configuration always runs first.
  for i in $(seq 0 $((${#configs[@]} - 1))); do
    run_config "${configs[$(((i + round) % ${#configs[@]}))]}"
  done
done
"$PY" - "$OUT/loop_results.txt" <<'PYEOF'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    name, _, v = line.partition(" ")
    if v.strip():
        runs.setdefault(name, []).append(float(v))
base = statistics.median(runs.get("none", [0]) or [0])
for name, v in runs.items():
    med = statistics.median(v)
    print(f"{name:8s} median {med:8.1f} it/s  ratio to none {med / base if base else 0:.3f}  runs {v}")
PYEOF
sleep 2
kill $LE $LD $LDC; wait 2>/dev/null
echo "-- exact listener (last report)"; tail -12 "$OUT/listen_exact.txt"
echo "-- duty listener (last report)"; tail -12 "$OUT/listen_duty.txt"
echo "-- duty-callbacks listener (last report)"; tail -12 "$OUT/listen_dutycb.txt"
echo "-- loop stderr"; sort "$OUT/loop_stderr.txt" | uniq -c | head

echo "== 3. launch stacks through the probe"
"$DIR/bin/ws_cuda_listen" --socket /tmp/ws-p.sock --mode exact --rate 200 --print-kernels 0 > "$OUT/listen_probe.txt" 2>&1 &
LP=$!
sleep 0.5
CUDA_INJECTION64_PATH=$LIB WARPSCOPE_AGENT_SOCKET=/tmp/ws-p.sock "$PY" "$HERE/launch_heavy.py" 20 > "$OUT/probe_loop.txt" 2>&1 &
P=$!
sleep 6
"$DIR/bin/warpscope-agent" probe-stack --pid $P --uprobe "$LIB:warpscope_cuda_launch_probe" --duration 5s --top 2 2>&1 | head -80
wait $P
kill $LP; wait $LP 2>/dev/null
tail -6 "$OUT/listen_probe.txt"
