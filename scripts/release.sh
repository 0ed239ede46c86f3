#!/usr/bin/env bash
# Packages the binaries already built in build/ (scripts/build.sh) as a release
# for x86-64 Linux distributions with glibc 2.28 or newer (RHEL 8 and 9, Ubuntu
# 20.04-24.04, Debian 11 and 12; release_bpf_test runs it on Debian 11's 2.31),
# with nothing to install: the programs bring their own glibc, and the CUDA
# library needs no more than 2.28 of the application's.
#
#   scripts/release.sh                  # -> build/release/warpscope-VERSION-linux-x86_64.tar.gz
#   scripts/release.sh --build DIR      # another build directory (the tarball goes to DIR/release)
#
# VERSION is what `warpscope-agent --version` reports (the project version in
# CMakeLists.txt). The tarball holds one directory, warpscope-VERSION-linux-x86_64/:
#   bin/warpscope-{agent,server}       the commands: wrappers that run each program
#                                      through Debian 12's dynamic loader shipped here
#   libexec/warpscope-{agent,server}   that loader, one copy named after each program
#                                      (the process's comm and /proc/PID/exe)
#   lib/warpscope/bin/                 the programs, as built (debug info stripped)
#   lib/warpscope/runtime/             the Debian 12 libraries they need, glibc included
#   lib/warpscope/libwarpscope_cuda.so the CUDA injection library (uses the application's
#                                      glibc: built for 2.28 and newer, checked here)
#   scripts/install.sh, deploy/systemd/ the installer and the systemd units
#   share/doc/warpscope/               LICENSE and the licences of everything bundled
# Install: tar xf ...; sudo warpscope-VERSION-linux-x86_64/scripts/install.sh
# (docs/release.md).
set -euo pipefail

build=""
while (( $# > 0 )); do
  case "$1" in
    --build) build="${2:?--build needs a directory}"; shift 2 ;;
    -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
    *) echo "release.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
if [[ -n "$build" ]]; then
  build=$(cd "$build" && pwd) || { echo "release.sh: no directory $build" >&2; exit 1; }
fi
cd "$(dirname "${BASH_SOURCE[0]}")/.."
build=${build:-build}
for f in bin/warpscope-agent bin/warpscope-server lib/libwarpscope_cuda.so; do
  [[ -f "$build/$f" ]] || { echo "release.sh: $build/$f is missing: build first (scripts/build.sh)" >&2; exit 1; }
done
for tool in ldd objcopy objdump dpkg-query tar gzip; do
  command -v "$tool" > /dev/null || { echo "release.sh: $tool is missing" >&2; exit 1; }
done
[[ "$(uname -m)" == x86_64 ]] || { echo "release.sh: x86-64 builds only" >&2; exit 1; }

version=$("$build/bin/warpscope-agent" --version | awk '{ print $2 }')
[[ -n "$version" ]] || { echo "release.sh: $build/bin/warpscope-agent --version said nothing" >&2; exit 1; }
name="warpscope-$version-linux-x86_64"
out="$build/release"
tree="$out/$name"
rm -rf "$tree" "$out/$name.tar.gz"
mkdir -p "$tree"/{bin,libexec,lib/warpscope/bin,lib/warpscope/runtime,scripts,deploy/systemd,share/doc/warpscope/licenses}

# The CUDA library runs on the application's glibc, not the bundled one.
cuda/glibc_floor_test.sh "$build/lib/libwarpscope_cuda.so" 2.28 > /dev/null ||
  { echo "release.sh: $build/lib/libwarpscope_cuda.so needs a glibc newer than 2.28" >&2; exit 1; }

# The programs (symbols kept: profiles of the agent itself stay readable).
for program in warpscope-agent warpscope-server; do
  objcopy --strip-debug "$build/bin/$program" "$tree/lib/warpscope/bin/$program"
done
objcopy --strip-debug "$build/lib/libwarpscope_cuda.so" "$tree/lib/warpscope/libwarpscope_cuda.so"
chmod 0644 "$tree/lib/warpscope/libwarpscope_cuda.so"

# Their libraries: what ldd resolves here, and all of glibc's libraries, so
# that nothing the programs load later (NVML's libnvidia-ml.so.1 and its
# libpthread, libdl, librt; NSS modules) mixes in the host's glibc. Each file
# under its soname.
declare -A libs=()
while read -r soname path; do
  libs[$soname]=$path
done < <(ldd "$build/bin/warpscope-agent" "$build/bin/warpscope-server" |
  awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }')
while read -r path; do
  libs[${path##*/}]=$path
done < <(dpkg-query -L libc6 | grep -E '^/lib/x86_64-linux-gnu/lib[^/]*\.so\.[0-9]+$' |
  grep -vE '/lib(c_malloc_debug|memusage|pcprofile)\.')
loader=/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2
[[ -f "$loader" ]] || { echo "release.sh: $loader is missing" >&2; exit 1; }
for soname in "${!libs[@]}"; do
  cp -L "${libs[$soname]}" "$tree/lib/warpscope/runtime/$soname"
  chmod 0644 "$tree/lib/warpscope/runtime/$soname"
done
for program in warpscope-agent warpscope-server; do
  cp -L "$loader" "$tree/libexec/$program"
  chmod 0755 "$tree/libexec/$program"
done

# One wrapper for both commands: the loader (named after the program) runs the
# program with the bundled libraries first; the host's ld.so.cache and library
# directories come after them (NVML from the NVIDIA driver).
wrapper='#!/bin/sh
# warpscope release: runs lib/warpscope/bin/NAME through the dynamic loader
# and libraries of this release (lib/warpscope/runtime), whatever the host'"'"'s
# glibc. The loader'"'"'s copy in libexec/ carries the program'"'"'s name, so the
# process is NAME (comm) and its /proc/PID/exe lies in PREFIX/libexec.
self=$(readlink -f "$0") || exit 127
root=${self%/bin/*}
name=${self##*/}
exec "$root/libexec/$name" --library-path "$root/lib/warpscope/runtime" --argv0 "$0" \
  "$root/lib/warpscope/bin/$name" "$@"'
for program in warpscope-agent warpscope-server; do
  printf '%s\n' "$wrapper" > "$tree/bin/$program"
  chmod 0755 "$tree/bin/$program"
done

# The installer and the units (scripts/install.sh installs from this tree).
install -m 0755 scripts/install.sh "$tree/scripts/install.sh"
install -m 0644 deploy/systemd/*.service.in deploy/systemd/*.default "$tree/deploy/systemd/"

# Licences: the project's, then each Debian package whose files are in the
# tarball (the shared libraries above) or compiled into the programs (the
# static libraries CMake found, header-only libraries, the static libstdc++
# and libgcc of libwarpscope_cuda.so), and the web UI's npm dependencies.
if [[ -f LICENSE ]]; then
  install -m 0644 LICENSE "$tree/share/doc/warpscope/LICENSE"
else
  echo "release.sh: warning: the repository has no LICENSE file, so the release has none for warpscope itself" >&2
fi
cache="$build/CMakeCache.txt"
compiled_in=()
for var in LIBBPF_STATIC LIBELF_STATIC LIBZ_STATIC WS_LIBIBERTY WS_PROTOBUF_STATIC_LIB; do
  path=$(sed -n "s/^$var:[A-Z]*=//p" "$cache")
  [[ -n "$path" && -f "$path" ]] && compiled_in+=("$path")
done
compiled_in+=(/usr/include/xxhash.h /usr/include/nlohmann/json.hpp /usr/include/httplib.h
  "$(g++ -print-file-name=libstdc++.a)" "$(g++ -print-file-name=libgcc_eh.a)")
# dpkg knows each file under one of its names (merged /usr: /lib or /usr/lib,
# a symlink or its target): ask once for all of them.
declare -A owners=() packages=()
candidates() { printf '%s\n' "$1" "$(readlink -f "$1")" "/usr$1" "${1#/usr}"; }
while IFS= read -r line; do
  owners[${line#*: }]=${line%%:*}
done < <(for path in "${libs[@]}" "$loader" "${compiled_in[@]}"; do candidates "$path"; done | sort -u |
  xargs dpkg-query -S 2> /dev/null | grep -v ', ' || true)
for path in "${libs[@]}" "$loader" "${compiled_in[@]}"; do
  owner=""
  while read -r candidate; do
    [[ -n "${owners[$candidate]:-}" ]] && { owner=${owners[$candidate]}; break; }
  done < <(candidates "$path")
  [[ -n "$owner" ]] || { echo "release.sh: no Debian package owns $path (its licence?)" >&2; exit 1; }
  packages[$owner]=1
done
for package in "${!packages[@]}"; do
  copyright="/usr/share/doc/$package/copyright"
  [[ -f "$copyright" ]] || { echo "release.sh: $copyright is missing" >&2; exit 1; }
  install -m 0644 "$copyright" "$tree/share/doc/warpscope/licenses/$package.copyright"
done
for dep in $(sed -n '/"dependencies"/,/}/{/"dependencies"/d; s/^ *"\([^"]*\)":.*/\1/p}' ui/package.json); do
  license=$(ls ui/node_modules/"$dep"/LICEN[CS]E* 2> /dev/null | head -n1)
  [[ -n "$license" ]] || { echo "release.sh: ui/node_modules/$dep has no LICENSE (build the UI first)" >&2; exit 1; }
  install -m 0644 "$license" "$tree/share/doc/warpscope/licenses/npm-$dep.LICENSE"
done
{
  echo "warpscope $version for x86-64 Linux (libwarpscope_cuda.so: the application's glibc 2.28 or newer)."
  echo "Bundled from Debian $(cat /etc/debian_version) (lib/warpscope/runtime; licences in licenses/):"
  for package in $(printf '%s\n' "${!packages[@]}" | sort); do
    dpkg-query -W -f='  ${Package} ${Version}\n' "$package"
  done
} > "$tree/share/doc/warpscope/BUNDLED"
echo "$version" > "$tree/VERSION"

# Smoke test here: the wrappers start the bundled programs.
"$tree/bin/warpscope-agent" --version > /dev/null ||
  { echo "release.sh: the packaged warpscope-agent does not start" >&2; exit 1; }
"$tree/bin/warpscope-server" --help > /dev/null ||
  { echo "release.sh: the packaged warpscope-server does not start" >&2; exit 1; }

tar -C "$out" --owner=0 --group=0 --numeric-owner --sort=name -cf - "$name" | gzip -9n > "$out/$name.tar.gz.tmp"
mv "$out/$name.tar.gz.tmp" "$out/$name.tar.gz"
echo "release.sh: $out/$name.tar.gz ($(du -h "$out/$name.tar.gz" | cut -f1); ${#libs[@]} libraries, ${#packages[@]} licences)"
