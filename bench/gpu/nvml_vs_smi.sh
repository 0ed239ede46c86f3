#!/usr/bin/env bash
# GPU metrics from NVML on the H200 host: `warpscope-agent run` beside a PyTorch job
# (bench/gpu/gpu_job.py) for SECONDS, storing into a local warpscope-server;
# the stored GPU metrics against nvidia-smi read every second at the same
# time, per-process attribution, the Prometheus endpoint, and what NVML
# collection costs (bench nvml_collect_bench against the real libnvidia-ml).
#   bench/gpu/nvml_vs_smi.sh BUILD_DIR [SECONDS]      (run from the repository root)
set -uo pipefail
B=${1:?build dir}
SECS=${2:-60}
PY=${PY:-/opt/torch/.venv/bin/python3}
OUT=${OUT:-/tmp/nvml_vs_smi}
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# Binaries carried from the build machine may bring their Debian libraries in
# BUILD_DIR/lib; only warpscope's own processes use them.
ws=(env)
[ -d "$B/lib" ] && ws=(env LD_LIBRARY_PATH="$B/lib")
mkdir -p "$OUT"
rm -rf "$OUT/data" "$OUT/agent"

echo "== nvidia-smi fields"
fields="timestamp,utilization.gpu,power.draw,power.draw.average,power.draw.instant,memory.used,memory.reserved,memory.total,clocks.sm,temperature.gpu"
nvidia-smi --query-gpu=$fields --format=csv,noheader,nounits >/dev/null 2>&1 ||
  fields="timestamp,utilization.gpu,power.draw,memory.used,memory.total,clocks.sm,temperature.gpu"
echo "$fields" | tee "$OUT/smi_fields.txt"

"${ws[@]}" "$B/bin/warpscope-server" --listen 127.0.0.1:7071 --data-dir "$OUT/data" --token t >"$OUT/server.log" 2>&1 &
server=$!
"$PY" "$here/gpu_job.py" $((SECS + 25)) >"$OUT/phases.txt" 2>"$OUT/job.log" &
job=$!
sleep 10   # CUDA init, the first phase under way
"${ws[@]}" "$B/bin/warpscope-agent" run --server http://127.0.0.1:7071 --token t --state-dir "$OUT/agent" \
  --upload-interval 5s --metrics-listen 127.0.0.1:9400 2>"$OUT/agent.log" &
agent=$!
sleep 2
from_ms=$(( $(date +%s%3N) ))
nvidia-smi --query-gpu=$fields --format=csv,noheader,nounits -lms 1000 >"$OUT/smi.csv" 2>&1 &
smi=$!
nvidia-smi pmon -s um -d 1 -c "$SECS" >"$OUT/pmon.txt" 2>&1 &
sleep "$SECS"
curl -s http://127.0.0.1:9400/metrics >"$OUT/prometheus.txt"
to_ms=$(( $(date +%s%3N) ))
kill "$smi" 2>/dev/null
kill -TERM "$agent"; wait "$agent"; echo "agent exit $?"
kill "$job" 2>/dev/null; wait "$job" 2>/dev/null
for m in gpu_utilization gpu_power gpu_memory_used gpu_sm_clock gpu_temperature gpu_process_sm_utilization gpu_process_memory_used; do
  group=gpu
  case $m in gpu_process_*) group=gpu,pid,comm ;; esac
  curl -s -H 'Authorization: Bearer t' \
    "http://127.0.0.1:7071/api/v1/metrics?name=$m&from=$from_ms&to=$to_ms&step=1s&group_by=$group" >"$OUT/metric_$m.json"
done
curl -s -H 'Authorization: Bearer t' "http://127.0.0.1:7071/api/v1/metric_names" >"$OUT/metric_names.json"
curl -s -H 'Authorization: Bearer t' "http://127.0.0.1:7071/api/v1/targets?from=$from_ms&to=$to_ms" >"$OUT/targets.json"
kill "$server"; wait "$server" 2>/dev/null
echo "== job pid $job; agent log:"; tail -5 "$OUT/agent.log"
echo "== stored metric names:"; cat "$OUT/metric_names.json"; echo
echo "== comparison with nvidia-smi (seconds near a phase change left out)"
python3 "$here/compare_nvidia_smi.py" "$OUT" "$job"
echo "== nvidia-smi pmon (head)"; head -8 "$OUT/pmon.txt"
echo "== Prometheus endpoint (DCGM names)"; grep -E '^(DCGM_FI_DEV_GPU_UTIL|DCGM_FI_DEV_POWER_USAGE|DCGM_FI_DEV_FB_USED|DCGM_FI_PROF_SM_ACTIVE|warpscope_gpu_process_sm)' "$OUT/prometheus.txt" | head -8
echo "== NVML collection cost (real libnvidia-ml)"
"${ws[@]}" "$B/bin/nvml_collect_bench" --library /usr/lib/libnvidia-ml.so.1 --interval-ms 1000 --per-call 2>&1 | tail -30 || true
