#!/usr/bin/env bash
# The agent, cross-built for arm64, in Debian's arm64 kernels under QEMU
# (tests/vm/vm.sh, -M virt -cpu max,pauth-impdef=on):
#
#   tests/vm/check_arm64.sh build SRC BUILD_ARM64        # the cross build, once
#   tests/vm/check_arm64.sh KERNEL SRC BUILD_ARM64       # debian12-6.1-arm64 | debian11-5.10-arm64
#
# `build` makes the sysroot (scripts/arm64_sysroot.sh), configures
# BUILD_ARM64 with cmake/toolchain-arm64.cmake and builds warpscope-agent and
# a no-frame-pointer C program (-O2 -fomit-frame-pointer, hot and cold
# functions called 3:1 by work()), then the guest root
# (tests/vm/arm64_root.sh, BUILD_ARM64/root). A KERNEL run records that
# program for 6 s at 299 Hz and checks, as check_kernel.sh does on x86-64:
#   split   hot's share of hot+cold within 0.70-0.80 (3:1 is 0.75)
#   main    at least 95 % of the program's stacks reach main
#   driver  the unwinder driver the probes chose (bpf_loop on 6.1, tail_call on 5.10)
# Prints one "== check NAME ok|FAIL: detail" line each (tests/vm/folded_checks.sh,
# as check_kernel.sh does); exits 1 on any FAIL.
# Root (the VM's kernel cache, the agent as root); without it, SKIPPED.
set -uo pipefail
what=$1 src=$(cd "$2" && pwd) build=$3
if [[ $(id -u) != 0 ]]; then
  echo "SKIPPED: needs root (the kernel cache in /var/cache, the agent as root)"
  exit 0
fi
mkdir -p "$build" && build=$(cd "$build" && pwd)

if [[ $what == build ]]; then
  set -e
  command -v aarch64-linux-gnu-g++ >/dev/null || { echo "FAIL: no aarch64-linux-gnu-g++ (Debian package g++-aarch64-linux-gnu)"; exit 1; }
  "$src/scripts/arm64_sysroot.sh" "$build/sysroot"
  cmake -S "$src" -B "$build" -DCMAKE_TOOLCHAIN_FILE="$src/cmake/toolchain-arm64.cmake" \
    -DWS_ARM64_SYSROOT="$build/sysroot" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DWARPSCOPE_BUILD_TESTS=OFF -DWARPSCOPE_BUILD_BENCH=OFF -DWARPSCOPE_BUILD_UI=OFF >/dev/null
  cmake --build "$build" --target warpscope-agent -j "$(nproc)" >/dev/null
  mkdir -p "$build/testprogs"
  aarch64-linux-gnu-gcc -O2 -fomit-frame-pointer -o "$build/testprogs/split_3_1" "$src/tests/vm/split_3_1.c"
  "$src/tests/vm/arm64_root.sh" "$build/root" "$build"
  echo "PASS build: $build/bin/warpscope-agent ($(readelf -h "$build/bin/warpscope-agent" | awk -F: '/Machine/ {gsub(/^ +/, "", $2); print $2}'))"
  exit 0
fi

case $what in
  debian12-6.1-arm64) expect_driver=bpf_loop ;;
  debian11-5.10-arm64) expect_driver=tail_call ;;
  *) echo "FAIL: no checks for $what" >&2; exit 2 ;;
esac
[[ -x $build/root/ws/bin/warpscope-agent ]] || { echo "FAIL: no cross build in $build (run: $0 build SRC $build)"; exit 1; }
. "$src/tests/vm/folded_checks.sh"  # check, share, ratio, within
# No apostrophes in this script: it goes to the guest single-quoted.
guest_script='
/ws/testprogs/split_3_1 12 >/dev/null & p=$!
sleep 1
/ws/bin/warpscope-agent record -p $p -d 6s -F 299 -o /tmp/split.folded --top 0 >/tmp/record.log 2>&1
echo "== record"; cat /tmp/record.log
echo "== folded"; cat /tmp/split.folded
wait $p
'
out=$(WS_VM_ROOT="$build/root" WS_VM_TIMEOUT=${WS_VM_TIMEOUT:-300} "$src/tests/vm/vm.sh" "$what" -- bash -c "$guest_script" 2>&1)
rc=$?
if [[ $rc != 0 ]]; then
  echo "FAIL boot: vm.sh exited $rc"; echo "$out" | tail -20; exit 1
fi
folded=$(mktemp) && trap 'rm -f "$folded"' EXIT
sed -n '/^== folded/,$p' <<<"$out" | tail -n +2 >"$folded"
record=$(sed -n '/^== record/,/^== folded/p' <<<"$out")
results=$(
  grep -Eq "unwinder driver $expect_driver" <<<"$record" && ok=1 || ok=0
  check driver $ok "$(grep -Eo 'unwinder driver [a-z_]+' <<<"$record" | head -1), want $expect_driver"
  read -r hot n < <(share "$folded" ";hot ")
  read -r cold _ < <(share "$folded" ";cold ")
  r=$(ratio "$hot" "$cold")
  check split "$([[ $n -ge 500 ]] && within "$r" 0.70 0.80 || echo 0)" "hot $r of $n samples (3:1 is 0.75)"
  read -r m n < <(share "$folded" "(^|;)main(;| )")
  check main "$([[ $n -ge 500 ]] && within "$m" 0.95 1 || echo 0)" "main in $m of $n samples"
)
printf '%s\n' "$results"
grep -q "^== check [a-z_]* FAIL" <<<"$results" && { echo "$record" | tail -8; exit 1; }
exit 0
