#!/usr/bin/env bash
# GPU host check of the insights through the real pipeline (not a test):
#   bench/gpu/insights_check.sh DIR [SECONDS] [MODE] [JOBS]
# DIR holds bin/{warpscope-agent,warpscope-server} and lib/libwarpscope_cuda.so
# (build here, carry over). Three PyTorch jobs run SECONDS seconds each with
# the injection library, the real agent (GPU-time MODE, default adaptive: the
# agent's default) streaming to a real warpscope-server: a loop whose GPU
# waits for Python preprocessing (starved_loop.py), a launch-bound loop of
# tiny elementwise kernels (launch_heavy.py) and a matmul loop
# (launch_heavy.py matmul) and a memory-bound loop of elementwise steps on
# 2^28 floats (launch_heavy.py stream). For each, the insights of the job's range and its
# activity analyses go to $OUT, and insights_summary.py says which insights
# each job got, their severity (one rule of the saving: the matmul loop, which
# synchronises while its GPU stays busy, gets nothing above low) and the
# ranges they rest on.
set -u
DIR=$(cd "$1" && pwd); SECONDS_RUN=${2:-40}; MODE=${3:-adaptive}; JOBS=${4:-starved launch_bound matmul stream}
OUT=${OUT:-/tmp}
PY=${PY:-/opt/torch/.venv/bin/python3}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$HERE/pipeline.sh"
run_job() {
  local name=$1
  shift
  start_pipeline "$DIR" 17172 "ins-$name" --gpu-time-mode "$MODE"
  local start end
  start=$(date +%s%3N)
  WARPSCOPE_AGENT_SOCKET=$SOCK CUDA_INJECTION64_PATH=$DIR/lib/libwarpscope_cuda.so \
    timeout 300 "$PY" "$@" 2>&1 | tail -2
  end=$(date +%s%3N)
  sleep 8  # the analyses' grace period, then an upload window
  local from=$(( (start / 1000 + 2) * 1000 )) to=$(( end / 1000 * 1000 ))
  curl -s -m 30 "$API/api/v1/insights?from=$from&to=$to" > "$OUT/insights_$name.json"
  for m in cuda_gpu_busy_seconds:category cuda_gpu_idle_seconds:reason cuda_kernels: cuda_short_kernels: \
           cuda_kernel_sequence_count:sequence gpu_utilization: gpu_clocks_throttled:reason \
           gpu_dram_bandwidth: gpu_tensor_activity:; do
    # 1 s steps: one reading per series and step, so the steps' averages add up to the sums.
    local metric=${m%%:*} group=${m#*:} args=()
    [[ -n $group ]] && args=(--data-urlencode "group_by=$group")
    curl -s -m 30 -G "$API/api/v1/metrics" --data-urlencode "name=$metric" --data-urlencode "from=$from" \
      --data-urlencode "to=$to" --data-urlencode "step=1s" "${args[@]}" > "$OUT/metric_${name}_${metric}.json"
  done
  echo "$from $to" > "$OUT/range_$name.txt"
  stop_pipeline
  mv "$OUT/agent.log" "$OUT/agent_$name.log"
}
for job in $JOBS; do
  case $job in
    starved) run_job starved "$HERE/starved_loop.py" "$SECONDS_RUN" ;;
    launch_bound) run_job launch_bound "$HERE/launch_heavy.py" "$SECONDS_RUN" ;;
    matmul) run_job matmul "$HERE/launch_heavy.py" "$SECONDS_RUN" matmul ;;
    stream) run_job stream "$HERE/launch_heavy.py" "$SECONDS_RUN" stream ;;
  esac
done
"$PY" "$HERE/insights_summary.py" "$OUT" $JOBS | tee "$OUT/summary.txt"
