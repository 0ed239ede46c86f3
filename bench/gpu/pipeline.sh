# Sourced by the GPU host checks (bench/gpu/*.sh): the real pipeline, a
# warpscope-server with a fresh embedded store and `warpscope-agent run` in
# exact mode listening for the injection library, on loopback.
#   start_pipeline DIR PORT NAME [AGENT FLAGS...]
# DIR holds bin/ and lib/ (our binaries find their Debian libraries in
# DIR/lib); data under /tmp/ws-NAME-*, logs in $OUT/server.log and
# $OUT/agent.log. Sets SOCK (the agent's CUDA socket), API, SERVER_PID,
# AGENT_PID. stop_pipeline ends both.
start_pipeline() {
  local dir=$1 port=$2 name=$3
  shift 3
  SOCK=/tmp/ws-$name/cuda.sock  # the agent refuses a socket directly in world-writable /tmp
  API=http://127.0.0.1:$port
  rm -rf "/tmp/ws-$name-data" "/tmp/ws-$name-agent"
  LD_LIBRARY_PATH=$dir/lib "$dir/bin/warpscope-server" --listen "127.0.0.1:$port" --data-dir "/tmp/ws-$name-data" \
    > "$OUT/server.log" 2>&1 &
  SERVER_PID=$!
  sleep 1
  LD_LIBRARY_PATH=$dir/lib "$dir/bin/warpscope-agent" run --server "$API" --state-dir "/tmp/ws-$name-agent" \
    --upload-interval 2s --cuda-socket "$SOCK" --gpu-time-mode exact "$@" > "$OUT/agent.log" 2>&1 &
  AGENT_PID=$!
  sleep 3
}

stop_pipeline() {
  kill -INT "$AGENT_PID"; timeout 30 tail --pid="$AGENT_PID" -f /dev/null || kill -9 "$AGENT_PID"
  kill "$SERVER_PID"; timeout 30 tail --pid="$SERVER_PID" -f /dev/null || kill -9 "$SERVER_PID"
}
