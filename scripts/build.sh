#!/usr/bin/env bash
# Configures and builds everything into build/ (binaries in build/bin, libraries in build/lib).
# Arguments go to CMake's configure step after the defaults (scripts/test.sh
# passes -DWARPSCOPE_BUILD_BENCH=OFF: the tests need no benchmark programs).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWARPSCOPE_BUILD_BENCH=ON "$@" >/dev/null
cmake --build build -j"$(nproc)"
