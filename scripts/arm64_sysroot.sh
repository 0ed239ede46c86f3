#!/usr/bin/env bash
# An arm64 sysroot for cross-building warpscope: Debian 12's arm64 -dev
# packages and everything they depend on, unpacked (dpkg-deb -x) into a
# folder. Nothing on this machine changes: the packages come through a
# private apt configuration (as tests/vm/vm.sh fetches kernels), no arm64
# architecture is added to dpkg, and no maintainer script runs.
#
#   scripts/arm64_sysroot.sh [DIR [PACKAGE...]]   # default: build-arm64/sysroot
#
# PACKAGEs replace the default list (what the build links against); the VM
# tests make an arm64 guest root the same way (tests/vm/arm64_root.sh).
# Idempotent: a sysroot whose stamp names the same package list is kept.
# CMake uses it through cmake/toolchain-arm64.cmake (CMAKE_SYSROOT and
# pkg-config's sysroot), with the cross compiler of Debian's
# g++-aarch64-linux-gnu and this machine's protoc.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
sysroot=${1:-$here/../build-arm64/sysroot}
# What the agent, the server and the injection library link against.
packages=(libc6-dev linux-libc-dev libelf-dev zlib1g-dev libbpf-dev libzstd-dev libprotobuf-dev
          libsqlite3-dev libcurl4-openssl-dev libiberty-dev libxxhash-dev nlohmann-json3-dev
          libcpp-httplib-dev)
[[ $# -gt 1 ]] && packages=("${@:2}")
stamp="bookworm arm64: ${packages[*]}"
if [[ -f $sysroot/.stamp && $(cat "$sysroot/.stamp") == "$stamp" ]]; then
  exit 0
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/ws-sysroot.XXXXXX")
trap 'rm -rf "$work"' EXIT
apt=$work/apt
mkdir -p "$apt"/{state/lists/partial,cache/archives/partial,parts}
: >"$apt/status"
cat >"$apt/sources.list" <<'EOF'
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bookworm main
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bookworm-updates main
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian-security bookworm-security main
EOF
opts=(-o Dir::Etc::sourcelist="$apt/sources.list" -o Dir::Etc::sourceparts="$apt/parts"
      -o Dir::State="$apt/state" -o Dir::State::status="$apt/status" -o Dir::Cache="$apt/cache"
      -o APT::Sandbox::User=root -o Debug::NoLocking=1 -o APT::Architecture=arm64
      -o APT::Architectures::=arm64 -o APT::Install-Recommends=false)
apt-get "${opts[@]}" -qq update >&2
# Against an empty package database apt resolves the whole closure, down to
# libc6; --download-only fetches it without installing anything.
apt-get "${opts[@]}" -qq -y --download-only install "${packages[@]}" >&2
rm -rf "$sysroot.tmp" && mkdir -p "$sysroot.tmp"
for deb in "$apt"/cache/archives/*.deb; do
  dpkg-deb -x "$deb" "$sysroot.tmp"
done
# Absolute symlinks (libfoo.so -> /lib/aarch64-linux-gnu/libfoo.so.1) point
# into the sysroot, not at this machine's files.
while IFS= read -r link; do
  target=$(readlink "$link")
  [[ $target == /* ]] || continue
  ln -sfn "$(realpath -m --relative-to="$(dirname "$link")" "$sysroot.tmp$target")" "$link"
done < <(find "$sysroot.tmp" -type l)
echo "$stamp" >"$sysroot.tmp/.stamp"
rm -rf "$sysroot" && mv "$sysroot.tmp" "$sysroot"
echo "arm64_sysroot: $(find "$sysroot" -name '*.deb' -o -type f | wc -l) files in $sysroot" >&2
