#!/usr/bin/env bash
# Usage: glibc_floor_test.sh LIBRARY FLOOR (e.g. 2.31)
# Fails when the shared library LIBRARY needs a GLIBC symbol version above
# FLOOR, any other versioned dependency (GLIBCXX_, CXXABI_, GCC_: libstdc++
# and libgcc are linked in), or a NEEDED library other than libc, libpthread,
# libdl and the dynamic loader: what a CUDA application on that glibc loads.
set -euo pipefail
lib="${1:?library}"
floor="${2:?floor}"
command -v objdump > /dev/null || { echo "objdump (binutils) is missing" >&2; exit 1; }
fail=0

needed=$(objdump -p "$lib" | awk '$1 == "NEEDED" { print $2 }')
for n in $needed; do
  case "$n" in
    libc.so.6|libpthread.so.0|libdl.so.2|ld-linux-x86-64.so.2) ;;
    *) echo "unexpected NEEDED library: $n"; fail=1 ;;
  esac
done

# Versions of undefined dynamic symbols, "(GLIBC_2.34) dlopen" (weak ones
# too); "Base" is a weak reference without a version that nothing defines
# (__gmon_start__, the transactional-memory hooks).
while read -r version symbol; do
  case "$version" in
    GLIBC_[0-9]*)
      v=${version#GLIBC_}
      if [[ "$(printf '%s\n%s\n' "$v" "$floor" | sort -V | tail -n1)" != "$floor" ]]; then
        echo "needs $symbol@$version (above GLIBC_$floor)"; fail=1
      fi ;;
    *) echo "needs $symbol@$version (not glibc)"; fail=1 ;;
  esac
done < <(objdump -T "$lib" | awk '/\*UND\*/ && $(NF-1) != "Base" { v = $(NF-1); gsub(/[()]/, "", v); print v, $NF }')

if (( fail )); then
  echo "$lib: not loadable on glibc $floor (see cuda/glibc_floor.c)" >&2
  exit 1
fi
echo "$lib: glibc <= $floor, NEEDED: $(echo $needed)"
