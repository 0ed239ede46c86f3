#!/usr/bin/env bash
# GPU host: memory of the agent and of the application under PC sampling
# over a long run (not a test):
#   bench/gpu/pc_soak.sh DIR [SECONDS] [MODE]
# bench/gpu/pc_loop.py runs SECONDS with the injection library under the real
# agent (--gpu-time-mode MODE, default exact, PC sampling on, nvdisasm)
# streaming to a real server. Every 10 s: seconds since start, the agent's
# and the application's resident memory (kB), and the agent's PC sample and
# cubin counters. Prints the table and the growth from the first full minute
# to the last. Writes to $OUT.
set -u
DIR=$(cd "$1" && pwd); SECS=${2:-600}; MODE=${3:-exact}
OUT=${OUT:-/tmp/pc_soak}
PY=${PY:-/opt/torch/.venv/bin/python3}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$HERE/pipeline.sh"
mkdir -p "$OUT"
start_pipeline "$DIR" 17176 pc-soak --gpu-time-mode "$MODE" --gpu-pc-sampling on \
  --nvdisasm /usr/local/cuda/bin/nvdisasm --metrics-listen 127.0.0.1:17177
WARPSCOPE_AGENT_SOCKET=$SOCK CUDA_INJECTION64_PATH=$DIR/lib/libwarpscope_cuda.so \
  "$PY" "$HERE/pc_loop.py" "$SECS" > "$OUT/job.txt" 2> "$OUT/job_stderr.txt" &
APP=$!
t0=$(date +%s)
rss() { awk '/VmRSS/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
counter() { grep -F "event=\"$1\"" "$OUT/metrics.txt" | awk '{print $NF; exit}'; }
echo "s agent_kB app_kB gpu_pc_samples cuda_lib_pc_samples_dropped gpu_cubin_bytes" > "$OUT/soak.txt"
while kill -0 $APP 2>/dev/null; do
  sleep 10
  curl -s -m 5 http://127.0.0.1:17177/metrics > "$OUT/metrics.txt"
  echo "$(( $(date +%s) - t0 )) $(rss $AGENT_PID) $(rss $APP) $(counter gpu_pc_samples)" \
    "$(counter cuda_lib_pc_samples_dropped) $(counter gpu_cubin_bytes)" >> "$OUT/soak.txt"
done
wait $APP
echo "app exit $? $(cat "$OUT/job.txt")"
stop_pipeline
cat "$OUT/soak.txt"
"$PY" - "$OUT/soak.txt" <<'PYEOF'
import sys
rows = [l.split() for l in open(sys.argv[1])][1:]
rows = [[float(x) if x not in ("", "None") else 0 for x in r] for r in rows if len(r) >= 3 and float(r[2]) > 0]
if len(rows) >= 12:
    first, last = rows[5:11], rows[-6:]
    for col, name in ((1, "agent"), (2, "application")):
        a, b = max(r[col] for r in first), max(r[col] for r in last)
        print(f"{name}: max RSS in minute 1 {a / 1024:.1f} MiB, in the last minute {b / 1024:.1f} MiB ({(b - a) / 1024:+.1f} MiB)")
PYEOF
