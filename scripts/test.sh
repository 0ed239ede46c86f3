#!/usr/bin/env bash
# README command 2: set up, build, and run every test (unit and BPF; the BPF
# tests need root). .ci/run runs exactly this.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
scripts/bootstrap.sh
scripts/build.sh
cd build
ctest --output-on-failure -j"$(nproc)"
