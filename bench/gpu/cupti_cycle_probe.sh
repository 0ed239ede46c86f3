#!/usr/bin/env bash
# Runs bench/gpu/cupti_cycle_probe.py's matrix on a GPU host: graph replay,
# a training step and torch.profiler under each way of leaving CUPTI between
# windows, and the launch loop's cost in each idle state (interleaved rounds).
#   bench/gpu/cupti_cycle_probe.sh PROBE.so [ROUNDS]
# Writes one JSON line per run to $OUT/cupti_cycle.jsonl (exit codes included).
set -uo pipefail
probe=$1
rounds=${2:-3}
py=${PYTHON:-/opt/torch/.venv/bin/python3}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
out=${OUT:-/tmp/cupti_cycle}
mkdir -p "$out"
log=$out/cupti_cycle.jsonl
: >"$log"
run() {
  local line rc
  line=$(timeout 90 "$py" "$here/cupti_cycle_probe.py" "$probe" "$@" 2>"$out/stderr.tmp" | tail -n 1)
  rc=$?
  [ -n "$line" ] || line='{}'
  printf '{"args":"%s","rc":%d,"stderr_tail":%s,"result":%s}\n' "$*" "$rc" \
    "$(tail -c 400 "$out/stderr.tmp" | python3 -c 'import json,sys; print(json.dumps(sys.stdin.read()))')" "$line" >>"$log"
  echo "$* rc=$rc"
}
for lib in "$(dirname "$py")"/../lib/python3*/site-packages/torch/lib/*.so*; do
  grep -l -a -q cuptiSubscribe "$lib" && echo "imports cuptiSubscribe: $lib" >>"$out/imports.txt"
done
for s in 0 1 2; do run graph "$s" 6; done
for s in 0 1 2; do run train "$s" 6; done
for s in -1 1 0; do run kineto "$s"; done
for r in $(seq "$rounds"); do
  for s in -1 0 1 2; do run cost "$s" 3; done
done
