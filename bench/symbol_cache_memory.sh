#!/usr/bin/env bash
# The agent's memory on a host that keeps running binaries it has not seen
# before (not a test). Two agents profile the same workload side by side: one
# with a small symbol-table budget (--symbol-cache-bytes SMALL), one with a
# budget nothing reaches (the behaviour before the budget existed). The
# workload runs COUNT copies of python3, each with its own build id, one after
# another, each spinning for ~0.4 s, and a long-lived python3 throughout (its
# tables must stay). Prints both agents' RSS and symbol-table bytes (from
# their Prometheus endpoints) every 50 copies.
#   sudo bench/symbol_cache_memory.sh [COUNT] [SMALL] [BUILD]
set -eu
COUNT=${1:-300}; SMALL=${2:-8MiB}; B=$(cd "${3:-build}" && pwd)
DIR=$(mktemp -d)
PIDS=()
trap 'kill "${PIDS[@]}" 2>/dev/null; rm -rf "$DIR"' EXIT
"$B/bin/warpscope-server" --listen 127.0.0.1:17073 --data-dir "$DIR/data" 2> "$DIR/server.log" &
PIDS+=($!)
sleep 1
agent() {  # NAME PORT BUDGET
  "$B/bin/warpscope-agent" run --server http://127.0.0.1:17073 --state-dir "$DIR/$1" --no-gpu-metrics \
    --no-gpu-time --metrics-listen "127.0.0.1:$2" --symbol-cache-bytes "$3" 2> "$DIR/$1.log" &
  PIDS+=($!)
}
agent small 19481 "$SMALL"
agent unbounded 19482 64GiB
sleep 3

# Copies of python3 whose build ids differ, so that none shares a table.
PY=$(readlink -f /usr/bin/python3)
mkdir -p "$DIR/bin"
python3 - "$PY" "$DIR/bin" "$COUNT" <<'EOF'
import re, subprocess, sys
src, out, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
notes = subprocess.run(["readelf", "-n", src], capture_output=True, text=True).stdout
build_id = bytes.fromhex(re.search(r"Build ID: ([0-9a-f]+)", notes).group(1))
data = open(src, "rb").read()
at = data.index(build_id)
for i in range(count):
    new = (i + 1).to_bytes(4, "little") + build_id[4:]
    with open(f"{out}/py{i}", "wb") as f:
        f.write(data[:at] + new + data[at + len(build_id):])
EOF
chmod +x "$DIR"/bin/py*

SPIN='import time
t = time.time()
while time.time() - t < 0.4: pass'
PYTHONHOME=/usr "$PY" -c 'import time
while True: sum(range(100000)); time.sleep(0.05)' &
PIDS+=($!)

report() {
  for a in small:19481 unbounded:19482; do
    local m
    m=$(curl -s "http://127.0.0.1:${a#*:}/metrics")
    printf '  %-9s RSS %6.1f MB, symbol tables %6.1f MB, loaded %s, evicted %s\n' "${a%%:*}" \
      "$(awk '/^process_resident_memory_bytes/ {print $2 / 1e6}' <<< "$m")" \
      "$(awk '/event="symbol_table_bytes"/ {print $2 / 1e6}' <<< "$m")" \
      "$(awk '/event="symbol_tables_loaded"/ {print $2}' <<< "$m")" \
      "$(awk '/event="symbol_tables_evicted"/ {print $2}' <<< "$m")"
  done
}
T0=$(date +%s)
for ((i = 0; i < COUNT; i++)); do
  PYTHONHOME=/usr "$DIR/bin/py$i" -c "$SPIN"
  if (( (i + 1) % 50 == 0 )); then
    sleep 11  # one upload interval: the counters are those of the last batch
    echo "$((i + 1)) binaries, $(( $(date +%s) - T0 )) s:"
    report
  fi
done
