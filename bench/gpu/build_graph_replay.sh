#!/usr/bin/env bash
# Builds bench/gpu/graph_replay.cu (workload c of real_suite.sh) for Hopper:
#   bench/gpu/build_graph_replay.sh [OUTDIR]
# into OUTDIR/graph_replay (default bench/gpu/.build, which git ignores), with
# the CUDA runtime, libstdc++ and libgcc linked statically: the binary needs
# only glibc and the driver, whatever host it was built on.
# NVCC picks the compiler (default /usr/local/cuda/bin/nvcc).
set -eu
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
OUTDIR=${1:-$HERE/.build}
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
mkdir -p "$OUTDIR"
"$NVCC" -O2 -std=c++17 -arch=sm_90 -cudart static -Xcompiler=-static-libstdc++,-static-libgcc -o "$OUTDIR/graph_replay" "$HERE/graph_replay.cu"
echo "$OUTDIR/graph_replay"
