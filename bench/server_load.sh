#!/usr/bin/env bash
# Benchmark (not a test): warpscope-server ingest and query load with the
# embedded store, via bench/server_load (see the top of server_load.cc for
# what it measures). Builds nothing: build first with
#   cmake --build build --target server_load warpscope-server -j2
#
#   bench/server_load.sh [HOURS...]        # default: 1, then 24
#
# Each run starts its own server on a fresh data dir under /tmp (removed
# afterwards), backfills HOURS of 10 s windows from 20 nodes over 8
# connections, measures, queries, and prints a Markdown table. Extra
# arguments for server_load go in WS_SERVER_LOAD_ARGS (e.g. "--nodes 10"),
# another build dir in WS_BUILD_DIR.
#
# The 1 h run takes about a minute on the 2-core VM. The 24 h run posts
# 172,800 batches (~52 M rows) and takes about 20 minutes there (the server
# needs ~26 µs of CPU per row, the generator ~4 ms per batch, on the same 2
# cores); `bench/server_load.sh 1 6` is the quicker variant. Run it when nobody
# else is compiling: the tool prints the load average before and after ingest.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
BUILD=${WS_BUILD_DIR:-build}
for bin in server_load warpscope-server; do
  if [[ ! -x $BUILD/bin/$bin ]]; then
    echo "missing $BUILD/bin/$bin; build it: cmake --build $BUILD --target server_load warpscope-server -j2" >&2
    exit 2
  fi
done
(( $# > 0 )) || set -- 1 24
read -r load1 _ < /proc/loadavg
if awk -v l="$load1" -v n="$(nproc)" 'BEGIN { exit !(l > n / 2) }'; then
  echo "server_load.sh: load average $load1 on $(nproc) CPUs: others are busy, numbers will be noisy" >&2
fi
for hours in "$@"; do
  echo "## $hours h backfill"
  # shellcheck disable=SC2086
  "$BUILD/bin/server_load" --server-bin "$BUILD/bin/warpscope-server" --hours "$hours" ${WS_SERVER_LOAD_ARGS:-}
  echo
done
