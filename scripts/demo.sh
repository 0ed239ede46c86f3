#!/usr/bin/env bash
# README command 1: set up, build, and run warpscope's main job: the server
# with its embedded store (./warpscope-data) and the agent profiling this
# whole machine into it, continuously. Every 30 s it prints the hottest
# functions of the last 5 minutes, read back from the server's API.
# Ctrl-C stops both (the agent uploads its last window first).
#   DURATION=2m   stop by itself after that long (default: run until Ctrl-C)
#   PORT=7070     the server's port on 127.0.0.1
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
scripts/bootstrap.sh
scripts/build.sh >/dev/null

port="${PORT:-7070}"
url="http://127.0.0.1:${port}"
build/bin/warpscope-server --listen "127.0.0.1:${port}" --data-dir warpscope-data &
server=$!
agent=""
stop() {
  trap - EXIT INT TERM
  [[ -n "$agent" ]] && kill -TERM "$agent" 2>/dev/null && wait "$agent" || true
  kill -TERM "$server" 2>/dev/null && wait "$server" || true
}
trap stop EXIT INT TERM

for _ in $(seq 100); do
  python3 -c "import urllib.request; urllib.request.urlopen('${url}/healthz', timeout=1)" 2>/dev/null && break
  kill -0 "$server" 2>/dev/null || { echo "demo: warpscope-server did not start" >&2; exit 1; }
  sleep 0.1
done
build/bin/warpscope-agent run --server "$url" --upload-interval 10s &
agent=$!

cat <<MSG
demo: warpscope-server on ${url} (data in ./warpscope-data), agent profiling every process at 19 Hz.
demo: open ${url}/ in a browser for the UI; the API (docs/api.md), e.g.
  curl -o last5m.pb.gz '${url}/api/v1/profile?from=now-5m&format=pprof'   # then: go tool pprof -http=: last5m.pb.gz
  curl '${url}/api/v1/top?from=now-5m&limit=20'
  curl -G '${url}/api/v1/profile' --data-urlencode 'selector={comm=~"python.*"}' --data-urlencode format=collapsed
MSG
if [[ -f build/lib/libwarpscope_cuda.so ]]; then
  echo "demo: GPU time: start CUDA programs with CUDA_INJECTION64_PATH=$PWD/build/lib/libwarpscope_cuda.so (UI: gpu_time, GPU kernels)"
fi

end=$(( $(date +%s) + $(python3 -c "
import re,sys
t=sys.argv[1]; m=re.fullmatch(r'(\d+)(ms|s|m|h)?', t)
print(10**9 if not m else int(m[1]) * {'ms':0.001,'s':1,'m':60,'h':3600,None:1}[m[2]] // 1)" "${DURATION:-forever}") ))
next=$(( $(date +%s) + 25 ))
while kill -0 "$agent" 2>/dev/null && kill -0 "$server" 2>/dev/null && (( $(date +%s) < end )); do
  sleep 1
  (( $(date +%s) < next )) && continue
  next=$(( $(date +%s) + 30 ))
  python3 - "$url" <<'PY' || true
import json, sys, urllib.request
top = json.load(urllib.request.urlopen(sys.argv[1] + "/api/v1/top?from=now-5m&limit=15", timeout=30))
total = top["total"]
print(f"\n{total} samples in the last 5 minutes; top {len(top['functions'])} of {top['function_count']} functions by self time:")
print(f"{'SELF%':>8} {'TOTAL%':>8}  FUNCTION [binary]")
for f in top["functions"]:
    name = f["name"] if len(f["name"]) <= 70 else f["name"][:67] + "..."
    binary = f["binary"].rsplit("/", 1)[-1]
    binary = binary if binary.startswith("[") else f"[{binary}]"
    print(f"{100*f['self']/max(total,1):7.2f}% {100*f['total']/max(total,1):7.2f}%  {name} {binary}")
PY
done
