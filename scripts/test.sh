#!/usr/bin/env bash
# README command 2: set up, build, and run every test (unit and BPF; the BPF
# tests need root). .ci/run runs exactly this.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
scripts/bootstrap.sh
scripts/build.sh -DWARPSCOPE_BUILD_BENCH=OFF
cd build
ctest --output-on-failure -j"$(nproc)"
