#!/usr/bin/env bash
# GPU host check of PC sampling through the real pipeline (not a test):
#   bench/gpu/pc_sampling_check.sh DIR [SECONDS] [PERIOD]
# DIR holds bin/{warpscope-agent,warpscope-server} and lib/libwarpscope_cuda.so
# (build here, carry over). bench/gpu/pc_loop.py (a PyTorch matmul + softmax
# call site and a Triton call site with line information) runs SECONDS with
# the injection library while the real agent (exact GPU time, PC sampling on
# at period 2^PERIOD, nvdisasm) streams to a real server. Then over the job's
# range: the gpu_pc profile (collapsed), each kernel's source view and the
# stall shares, the agent's counters; and the same workload under Nsight
# Compute (no injection library; its SourceCounters and WarpStateStats
# sections on a few launches of each kernel) for the stall-reason shares.
# pc_summary.py prints the comparison. Writes to $OUT.
set -u
DIR=$(cd "$1" && pwd); SECS=${2:-30}; PERIOD=${3:-20}
OUT=${OUT:-/tmp/pc}
PY=${PY:-/opt/torch/.venv/bin/python3}
NCU=${NCU-/usr/local/cuda/bin/ncu}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$HERE/pipeline.sh"
mkdir -p "$OUT"
"$PY" "$HERE/pc_loop.py" --lines > "$OUT/lines.txt"
start_pipeline "$DIR" 17174 pc --gpu-pc-sampling on --gpu-pc-period "$PERIOD" \
  --nvdisasm /usr/local/cuda/bin/nvdisasm --metrics-listen 127.0.0.1:17175
WARPSCOPE_AGENT_SOCKET=$SOCK CUDA_INJECTION64_PATH=$DIR/lib/libwarpscope_cuda.so \
  timeout 300 "$PY" "$HERE/pc_loop.py" "$SECS" > "$OUT/job.txt" 2> "$OUT/job_stderr.txt"
sleep 10  # the join's grace, then an upload
read -r _ start _ end _ < "$OUT/job.txt"
from=$(( start - 1000 )); to=$(( end + 2000 ))
echo "$from $to" > "$OUT/range.txt"
q() { curl -s -m 60 "$API/api/v1/$1"; }
q "profile?type=gpu_pc&from=$from&to=$to&format=collapsed" > "$OUT/gpu_pc.collapsed"
q "profile?type=gpu_time&from=$from&to=$to&format=collapsed" > "$OUT/gpu_time.collapsed"
q "gpu/stalls?from=$from&to=$to" > "$OUT/stalls.json"
"$PY" - "$OUT/stalls.json" > "$OUT/kernels.txt" <<'PYEOF'
import json, sys
for k in json.load(open(sys.argv[1])).get("kernels", []):
    print(k["system_name"])
PYEOF
i=0
while read -r kernel; do
  curl -s -m 60 -G "$API/api/v1/gpu/kernel_source" --data-urlencode "kernel=$kernel" \
    --data-urlencode "from=$from" --data-urlencode "to=$to" > "$OUT/source_$i.json"
  i=$((i + 1))
done < "$OUT/kernels.txt"
curl -s -m 10 http://127.0.0.1:17175/metrics | grep -E "pc_|cubin|resident" > "$OUT/agent_metrics.txt"
grep -E "pc sampling|PC sampling|cupti" "$OUT/agent.log" "$OUT/job_stderr.txt" | head -20
stop_pipeline
# Nsight Compute on the same loop: every kernel from launch 60 on, 12 launches
# (NCU= leaves it out).
[[ -n $NCU ]] && timeout 400 "$NCU" --section WarpStateStats --section SourceCounters --print-kernel-base mangled \
  --launch-skip 60 --launch-count 12 --csv --page raw "$PY" "$HERE/pc_loop.py" --steps 40 \
  > "$OUT/ncu.csv" 2> "$OUT/ncu_stderr.txt"
[[ -n $NCU ]] && echo "ncu exit $? ($(wc -l < "$OUT/ncu.csv") lines)"
"$PY" "$HERE/pc_summary.py" "$OUT" | tee "$OUT/summary.txt"
