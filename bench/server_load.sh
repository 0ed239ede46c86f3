#!/usr/bin/env bash
# Benchmark (not a test): warpscope-server ingest and query load, with the
# embedded store and with the ClickHouse store side by side, via
# bench/server_load (see the top of server_load.cc for what it measures).
# Builds nothing: build first with
#   cmake --build build --target server_load warpscope-server -j2
#
#   bench/server_load.sh [HOURS...]        # default: 1, then 24
#
# For each HOURS, one run per store (WS_STORES, default "embedded clickhouse"),
# one after the other: each starts its own server on a fresh data dir under
# /tmp (and, for ClickHouse, its own private clickhouse-server, Debian's
# /usr/sbin/clickhouse-server, in a fresh dir; both removed afterwards),
# backfills HOURS of 10 s windows from 20 nodes over 8 connections,
# measures, queries, and the two tables are printed as one Markdown table
# with a column per store. ClickHouse's CPU is its own row (and a combined
# "server + ClickHouse" rate); it is not in "server CPU". Extra arguments for
# server_load go in WS_SERVER_LOAD_ARGS (e.g. "--nodes 10"), another build dir
# in WS_BUILD_DIR.
#
# The 1 h run takes about a minute per store on the 2-core VM. The 24 h run
# posts 172,800 batches (~52 M rows) and takes about 20 minutes there for the
# embedded store (the server needs ~26 µs of CPU per row, the generator ~4 ms
# per batch, on the same 2 cores); `bench/server_load.sh 1 6` is the quicker
# variant. Run it when nobody else is compiling: the tool prints the load
# average before and after ingest.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
BUILD=${WS_BUILD_DIR:-build}
STORES=${WS_STORES:-embedded clickhouse}
for bin in server_load warpscope-server; do
  if [[ ! -x $BUILD/bin/$bin ]]; then
    echo "missing $BUILD/bin/$bin; build it: cmake --build $BUILD --target server_load warpscope-server -j2" >&2
    exit 2
  fi
done
if [[ " $STORES " == *" clickhouse "* && ! -x /usr/sbin/clickhouse-server ]]; then
  echo "missing /usr/sbin/clickhouse-server: scripts/bootstrap.sh installs it (or WS_STORES=embedded)" >&2
  exit 2
fi
(( $# > 0 )) || set -- 1 24
read -r load1 _ < /proc/loadavg
if awk -v l="$load1" -v n="$(nproc)" 'BEGIN { exit !(l > n / 2) }'; then
  echo "server_load.sh: load average $load1 on $(nproc) CPUs: others are busy, numbers will be noisy" >&2
fi
out=$(mktemp -d /tmp/ws-server-load-out-XXXXXX)
trap 'rm -rf "$out"' EXIT
for hours in "$@"; do
  echo "## $hours h backfill"
  tables=()
  for store in $STORES; do
    case $store in
      embedded) args=(--label "embedded store") ;;
      clickhouse) args=(--clickhouse) ;;
      *) echo "server_load.sh: unknown store '$store' in WS_STORES (embedded, clickhouse)" >&2; exit 2 ;;
    esac
    # shellcheck disable=SC2086
    "$BUILD/bin/server_load" --server-bin "$BUILD/bin/warpscope-server" --hours "$hours" "${args[@]}" \
      ${WS_SERVER_LOAD_ARGS:-} > "$out/$store.md"
    # The run's one-line setting (nodes, hours, load average), then its table.
    grep -v '^|' "$out/$store.md" | sed '/^$/d' | sed "s/^/$store: /"
    tables+=("$out/$store.md")
  done
  echo
  # One table, a column per store. A row only one store has goes after the
  # row it follows in that store's table; "—" where a store has no such row.
  awk -F' [|] ' '
    FNR == 1 { file++; prev = "" }
    /^\| / {
      if ($0 ~ /^\|---/) next
      metric = substr($1, 3); value = $2; sub(/ \|$/, "", value)
      if (metric == "metric") { header[file] = value; next }
      if (!(metric in seen)) {
        seen[metric] = 1
        if (prev == "") { after[metric] = first; first = metric }
        else { after[metric] = after[prev]; after[prev] = metric }
      }
      cell[metric, file] = value
      prev = metric
    }
    END {
      line = "| metric"; sep = "|---"
      for (f = 1; f <= file; f++) { line = line " | " header[f]; sep = sep "|---" }
      print line " |"; print sep "|"
      for (m = first; m != ""; m = after[m]) {
        line = "| " m
        for (f = 1; f <= file; f++) line = line " | " ((m, f) in cell ? cell[m, f] : "—")
        print line " |"
      }
    }' "${tables[@]}"
  echo
done
