#!/usr/bin/env bash
# An arm64 guest root for tests/vm/vm.sh (WS_VM_ROOT): Debian 12's arm64
# packages that the cross-built agent and the checks need, unpacked, with
# the build's binaries beside them under /ws.
#
#   tests/vm/arm64_root.sh DIR BUILD     # BUILD: the cross build (build-arm64)
#
# The packages come through scripts/arm64_sysroot.sh (a private apt
# configuration; nothing on this machine changes) and are kept between runs;
# BUILD's bin/ and testprogs/ are copied in every time.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$1 build=$(cd "$2" && pwd)
"$here/../../scripts/arm64_sysroot.sh" "$root" bash coreutils grep sed gawk procps util-linux findutils \
  libstdc++6 libgcc-s1 libcurl4 libcpp-httplib0.11 libprotobuf32 libzstd1 libsqlite3-0 zlib1g libelf1 \
  python3-minimal
rm -rf "$root/ws" && mkdir -p "$root/ws"
cp -r "$build/bin" "$root/ws/"
[[ -d $build/testprogs ]] && cp -r "$build/testprogs" "$root/ws/"
# The guest mounts proc, sys, dev, run and tmp over these.
mkdir -p "$root"/{proc,sys,dev,run,tmp,root}
