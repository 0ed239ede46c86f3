#!/usr/bin/env bash
# Configures and builds everything into build/ (binaries in build/bin, libraries in build/lib).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)"
