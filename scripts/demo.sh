#!/usr/bin/env bash
# README command 1: set up, build, and run warpscope's main job: profile the
# whole machine for DURATION (default 10s) and print the hottest functions.
# The profile is written to warpscope-cpu.pb.gz (open it with `go tool pprof`,
# speedscope, Parca or Pyroscope).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
scripts/bootstrap.sh
scripts/build.sh >/dev/null
exec build/bin/warpscope-agent record --all --duration "${DURATION:-10s}" --output warpscope-cpu.pb.gz --top 15
