#!/usr/bin/env bash
# GPU host check of what timing every launch costs the application (not a test):
#   bench/gpu/launch_time_cost.sh DIR OTHER_LIB [ROUNDS] [SECONDS] [NAME=LIB ...]
# DIR holds bin/{warpscope-agent,warpscope-server} and lib/libwarpscope_cuda.so
# (build here, carry over); OTHER_LIB is another libwarpscope_cuda.so to
# compare with (the library before a change, built from that commit), and
# NAME=LIB more. The real agent (`warpscope-agent run`, exact mode) serves
# them all. ROUNDS interleaved rounds (the order rotating) of
# bench/gpu/launch_heavy.py for SECONDS each: without a library ("none"),
# with OTHER_LIB ("other"), with each NAME's, with DIR's ("this"). Prints
# iterations/s per round and each configuration's median against "other"
# and "none".
set -u
DIR=$(cd "$1" && pwd); ROUNDS=${3:-5}; SECS=${4:-8}
declare -A LIBS=([other]=$(cd "$(dirname "$2")" && pwd)/$(basename "$2") [this]=$DIR/lib/libwarpscope_cuda.so)
CONFIGS=(none other this)
for extra in "${@:5}"; do
  LIBS[${extra%%=*}]=$(cd "$(dirname "${extra#*=}")" && pwd)/$(basename "${extra#*=}")
  CONFIGS+=("${extra%%=*}")
done
OUT=${OUT:-/tmp}
PY=${PY:-/opt/torch/.venv/bin/python3}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CUDA_LIBS=/usr/local/cuda/lib64
. "$HERE/pipeline.sh"
start_pipeline "$DIR" 17072 cost
run() {  # config -> iterations/s
  if [ "$1" = none ]; then
    LD_LIBRARY_PATH=$CUDA_LIBS "$PY" "$HERE/launch_heavy.py" "$SECS"
  else
    WARPSCOPE_AGENT_SOCKET=$SOCK CUDA_INJECTION64_PATH=${LIBS[$1]} LD_LIBRARY_PATH=$CUDA_LIBS:$DIR/lib \
      "$PY" "$HERE/launch_heavy.py" "$SECS"
  fi 2>>"$OUT/loop_stderr.txt" | awk '/it_per_s/ {print $2}'
}
N=${#CONFIGS[@]}
for r in $(seq 1 "$ROUNDS"); do
  for i in $(seq 0 $((N - 1))); do
    c=${CONFIGS[$(( (i + r) % N ))]}
    echo "$c $(run "$c")" | tee -a "$OUT/rounds.txt"
  done
done
stop_pipeline
"$PY" - "$OUT/rounds.txt" <<'PYEOF' | tee "$OUT/compare.txt"
import statistics, sys
by = {}
for line in open(sys.argv[1]):
    c, v = line.split()
    by.setdefault(c, []).append(float(v))
med = {c: statistics.median(v) for c, v in by.items()}
for c, v in by.items():
    print(f"{c}: median {med[c]:.1f} it/s over {len(v)} rounds: {', '.join(f'{x:.1f}' for x in v)}")
for c in med:
    print(f"{c}: / other {med[c] / med['other']:.4f}, / none {med[c] / med['none']:.4f}")
PYEOF
