#!/usr/bin/env bash
# GPU host check of the energy answers through the real pipeline (not a test):
#   bench/gpu/energy_check.sh DIR [SECONDS]
# DIR holds bin/{warpscope-agent,warpscope-server} and lib/libwarpscope_cuda.so
# (build here, carry over). A two-site PyTorch loop (two_sites.py) runs
# SECONDS + 15 s with the injection library while the real agent (its
# defaults: adaptive GPU time, NVML every second, the energy counter every
# 10th) streams to a real server and nvidia-smi logs power.draw every 100 ms.
# Then, over SECONDS whole seconds inside the job: /api/v1/energy's GPU joules
# against nvidia-smi's power integrated over the same seconds, and the
# gpu_energy and gpu_time profiles summed per call site; energy_summary.py
# prints both.
set -u
DIR=$(cd "$1" && pwd); SECS=${2:-60}
OUT=${OUT:-/tmp/energy}
PY=${PY:-/opt/torch/.venv/bin/python3}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$HERE/pipeline.sh"
mkdir -p "$OUT"
start_pipeline "$DIR" 17173 energy --gpu-time-mode adaptive
nvidia-smi --query-gpu=timestamp,power.draw,power.draw.instant,utilization.gpu --format=csv,noheader,nounits \
  -lms 100 > "$OUT/smi.csv" 2>&1 &
SMI=$!
WARPSCOPE_AGENT_SOCKET=$SOCK CUDA_INJECTION64_PATH=$DIR/lib/libwarpscope_cuda.so \
  timeout 300 "$PY" "$HERE/two_sites.py" $((SECS + 15)) > "$OUT/job.txt" 2>&1
kill "$SMI"
sleep 14  # past the next energy-counter reading, then an upload
read -r _ start _ end < "$OUT/job.txt"
from=$(( (start / 1000 + 8) * 1000 )); to=$(( from + SECS * 1000 ))
echo "$from $to" > "$OUT/range.txt"
curl -s -m 60 "$API/api/v1/energy?from=$from&to=$to&group_by=gpu&step=10s" > "$OUT/energy_gpu.json"
curl -s -m 60 "$API/api/v1/energy?from=$from&to=$to&group_by=process" > "$OUT/energy_process.json"
for t in gpu_energy gpu_time; do
  curl -s -m 60 "$API/api/v1/profile?type=$t&from=$from&to=$to&format=collapsed" > "$OUT/$t.collapsed"
done
curl -s -m 60 "$API/api/v1/metrics?name=gpu_energy&from=$((from - 60000))&to=$((to + 60000))&step=1s" > "$OUT/metric_gpu_energy.json"
stop_pipeline
"$PY" "$HERE/energy_summary.py" "$OUT" | tee "$OUT/summary.txt"
