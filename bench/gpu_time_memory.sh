#!/usr/bin/env bash
# The agent's memory while it joins GPU time for a long time, without a GPU
# (not a test): the real agent and server, and tests/testprogs/cuda_launch_sites
# driving the real injection library through the fake CUPTI (two call sites,
# ~8,000 kernels/s) for MINUTES minutes. Prints the agent's RSS every 30 s.
#   sudo bench/gpu_time_memory.sh [MINUTES] [BUILD]
set -eu
MINUTES=${1:-10}; B=$(cd "${2:-build}" && pwd)
DIR=$(mktemp -d)
trap 'kill $A $S 2>/dev/null; rm -rf "$DIR"' EXIT
"$B/bin/warpscope-server" --listen 127.0.0.1:17072 --data-dir "$DIR/data" 2> "$DIR/server.log" &
S=$!
sleep 1
"$B/bin/warpscope-agent" run --server http://127.0.0.1:17072 --state-dir "$DIR/agent" --no-gpu-metrics \
  --cuda-socket "$DIR/cuda.sock" 2> "$DIR/agent.log" &
A=$!
sleep 3
# ~4,000 iterations (8,000 kernels) per second.
WARPSCOPE_CUPTI_PATH=$B/tests/libws_fake_cupti.so WARPSCOPE_AGENT_SOCKET=$DIR/cuda.sock \
  "$B/testprogs/cuda_launch_sites" "$B/lib/libwarpscope_cuda.so" $((MINUTES * 60 * 4000)) > "$DIR/app.log" 2>&1 &
P=$!
T0=$(date +%s)
while kill -0 $P 2>/dev/null && (( $(date +%s) - T0 < MINUTES * 60 + 120 )); do
  echo "$(( $(date +%s) - T0 )) s: agent RSS $(awk '/VmRSS/ {print $2}' /proc/$A/status) kB"
  sleep 30
done
wait $P || true
sleep 15  # the join's grace period and the last upload window
cat "$DIR/app.log"
curl -s "http://127.0.0.1:17072/api/v1/top?type=gpu_time&from=now-1h&limit=3" | head -c 600; echo
