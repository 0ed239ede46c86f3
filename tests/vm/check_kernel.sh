#!/usr/bin/env bash
# Boots one kernel with tests/vm/vm.sh and runs the agent's core checks there,
# in one boot, with the agent and test programs just built (BUILD):
#
#   tests/vm/check_kernel.sh KERNEL BUILD [DRIVER]
#
#   doctor       the kernel line names the driver the probes chose: bpf_loop
#                on Debian 12's 6.1, tail_call on Debian 11's 5.10
#   split        cpu_split's 3:1 CPU split within ±5 points (recorded alone, 299 Hz)
#   main         unwind_cpp (C++, no frame pointers): >= 95 % of its stacks reach main
#   deep         the same recursing 200 deep: >= 95 % of its stacks in the
#                recursion fill all 128 frames
#   python       Debian's python3 running workload.py split: Python frames in
#                caller order (main, run_split, outer, Pipeline.middle,
#                Pipeline.hot or .cold, adjacent) in >= 90 % of its stacks
#   off_cpu      off_cpu_split's 3:1 blocked-time split within ±5 points, under main
#   launch       the CUDA launch probe's uprobe (the GPU launch stacks' path;
#                cuda_probe_caller calls libwarpscope_cuda.so's probe): every
#                call captured with its stack down to main
#   gpu_time     gpu_time_bpf_test's first test: `warpscope-agent run`, a server
#                on the guest's loopback and the fake CUPTI; each kernel's
#                GPU time under the Python call site that launched it
# DRIVER (bpf_loop or tail_call) forces the unwinder's driver; by default the
# agent probes and chooses. Needs root like the other tests that run the agent;
# without it, it prints SKIPPED and exits 0. The emulated CPU is 5-15x slower
# than the host's: the workloads run long enough for the agent's start (about
# 5 s on 5.10, most of it in the verifier).
set -euo pipefail

[[ $# -ge 2 && $# -le 3 ]] || { echo "usage: $0 {debian12-6.1|debian11-5.10} BUILD [bpf_loop|tail_call]" >&2; exit 2; }
kernel=$1 build=$(cd "$2" && pwd) driver=${3:-}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
src=$(cd "$here/../.." && pwd)
if [[ $(id -u) -ne 0 ]]; then
  echo "SKIPPED: booting $kernel needs root (the kernel cache in /var/cache, the agent as root)"
  exit 0
fi
[[ -x $build/bin/warpscope-agent ]] || { echo "FAIL: no agent in $build/bin" >&2; exit 1; }
case $kernel in
  debian12-6.1) expect_driver=${driver:-bpf_loop} ;;
  debian11-5.10) expect_driver=${driver:-tail_call} ;;
  *) echo "FAIL: no checks for $kernel" >&2; exit 2 ;;
esac

# Inside the guest: every check prints "== check NAME ok|FAIL: details".
guest_script='
set -u
build=$1 src=$2 driver=$3 expect_driver=$4
agent=$build/bin/warpscope-agent
flags=()
[[ -n $driver ]] && flags=(--unwinder-driver "$driver")
. "$src/tests/vm/folded_checks.sh"  # check, share, ratio, within

echo "== doctor"
doctor=$("$agent" doctor --no-gpu-metrics --no-gpu-time 2>&1)
printf "%s\n" "$doctor"
if [[ -z $driver ]]; then
  grep -Eq "^kernel +ok +.*unwinder driver $expect_driver" <<<"$doctor" && ok=1 || ok=0
  check doctor $ok "$(grep -E "^kernel" <<<"$doctor" | cut -c1-160)"
fi

# The split alone on the CPU: beside other busy processes, the emulated
# CPU time slices skew it by a few points (0.71-0.77 seen).
"$build/testprogs/cpu_split" 600 >/dev/null & split=$!
sleep 1
echo "== record split"
"$agent" record --pid "$split" -F 299 --duration 6s --format collapsed -o /tmp/split.folded "${flags[@]}" 2>/tmp/split.log
rc=$?
grep -E "samples written|reached their root" /tmp/split.log
kill "$split" 2>/dev/null

# The other workloads, the CPU ones under distinct names (comm) so one
# recording tells them apart. They run until killed: under emulation, with
# four busy processes on one CPU, the agent takes tens of seconds to start.
cp "$build/testprogs/unwind_cpp" /tmp/unwind_deep
"$build/testprogs/unwind_cpp" 600 >/dev/null & cpp=$!
/tmp/unwind_deep 600 200 >/dev/null & deep=$!
python3 "$src/tests/testprogs/python/workload.py" split 600 >/dev/null & py=$!
"$build/testprogs/off_cpu_split" 600 >/dev/null & off=$!
sleep 1
echo "== record cpu"
"$agent" record --pid "$cpp,$deep,$py" -F 299 --duration 10s --format collapsed -o /tmp/cpu.folded -v "${flags[@]}" \
  2>/tmp/cpu.log
rc2=$?
grep -E "unwinder driver|samples written|reached their root|counter (user_stacks_truncated|unwind_walk_not_called)=" /tmp/cpu.log
grep -q "unwinder driver $expect_driver" /tmp/cpu.log && ok=1 || ok=0
check driver $ok "record: $(grep -o "unwinder driver [a-z_]*" /tmp/cpu.log)"
check record $([[ $rc == 0 && $rc2 == 0 ]] && echo 1 || echo 0) "exit $rc and $rc2"

read -r hot n <<<"$(share /tmp/split.folded "hot_three_quarters")"
read -r cold _ <<<"$(share /tmp/split.folded "cold_one_quarter")"
r=$(ratio "$hot" "$cold")
check split "$([[ $n -ge 500 ]] && within "$r" 0.70 0.80 || echo 0)" "hot $r of $n samples (3:1 is 0.75)"

grep "^unwind_cpp" /tmp/cpu.folded > /tmp/cpp.folded || true
read -r m n <<<"$(share /tmp/cpp.folded "(^|;)main;")"
check main "$([[ $n -ge 100 ]] && within "$m" 0.95 1 || echo 0)" "main in $m of $n samples"

grep "^unwind_deep" /tmp/cpu.folded > /tmp/deep.folded || true
full=$(awk '"'"'/Square::Area/ { c = $NF; t += c; if (gsub(/Recurse|Area|Burn/, "&") >= 128) h += c } END { printf "%.4f %d", t ? h / t : 0, t }'"'"' /tmp/deep.folded)
read -r d n <<<"$full"
check deep "$([[ $n -ge 50 ]] && within "$d" 0.95 1 || echo 0)" "128 frames in $d of $n samples"

grep "^python3" /tmp/cpu.folded > /tmp/py.folded || true
read -r order n <<<"$(share /tmp/py.folded ";main;run_split;outer;(Pipeline.middle;Pipeline.hot|Pipeline.cold)[; ]")"
read -r phot _ <<<"$(share /tmp/py.folded "Pipeline.hot")"
read -r pcold _ <<<"$(share /tmp/py.folded "Pipeline.cold")"
pr=$(ratio "$phot" "$pcold")
# (The hot:cold split itself is timed by the wall clock in workload.py, which
# an emulated CPU shared by five busy processes skews: shown, not checked.)
check python "$([[ $n -ge 100 ]] && within "$order" 0.90 1 || echo 0)" "caller order in $order of $n samples; hot $pr"

kill -0 "$off" 2>/dev/null || echo "off_cpu_split is gone: $(wait "$off"; echo "exit $?")"
echo "== record off_cpu"
"$agent" record --pid "$off" --type off_cpu --duration 8s --format collapsed -o /tmp/off.folded "${flags[@]}" 2>/tmp/off.log
rc=$?
grep -E "samples written|reached their root" /tmp/off.log
kill -0 "$off" 2>/dev/null || echo "off_cpu_split is gone: $(wait "$off"; echo "exit $?")"
read -r a n <<<"$(share /tmp/off.folded "main;.*sleep_a_while")"
read -r b _ <<<"$(share /tmp/off.folded "main;.*wait_on_pipe")"
r=$(ratio "$a" "$b")
check off_cpu "$([[ $rc == 0 && $n -gt 0 ]] && within "$r" 0.70 0.80 || echo 0)" \
  "sleep_a_while $r of the time under main ($a + $b of all)"
kill "$cpp" "$deep" "$py" "$off" 2>/dev/null

lib=$build/lib/libwarpscope_cuda.so
if [[ -f $lib ]]; then
  echo "== probe-stack"
  "$build/testprogs/cuda_probe_caller" "$lib" 600 >/dev/null & caller=$!
  sleep 1
  out=$("$agent" probe-stack --pid "$caller" --uprobe "$lib:warpscope_cuda_launch_probe" --duration 4s --top 1 \
        "${flags[@]}" 2>&1)
  printf "%s\n" "$out" | head -40
  calls=$(sed -n "s/.*warpscope_cuda_launch_probe: \([0-9]*\) calls, \([0-9]*\) stacks.*/\1 \2/p" <<<"$out")
  read -r c s <<<"${calls:-0 -1}"
  ok=1
  [[ $c -gt 100 && $c == "$s" ]] || ok=0
  for fn in enqueue_kernel training_step main; do grep -q "$fn" <<<"$out" || ok=0; done
  check launch $ok "$c calls, $s stacks, enqueue_kernel/training_step/main: $(grep -c -E "enqueue_kernel|training_step|main" <<<"$out") lines"
  kill "$caller" 2>/dev/null
else
  check launch 0 "no $lib in this build"
fi
gpu_test=$build/tests/gpu_time_bpf_test
if [[ -x $gpu_test ]]; then
  echo "== gpu_time_bpf_test"
  WARPSCOPE_UNWINDER_DRIVER=$driver "$gpu_test" --gtest_filter=GpuTimeTest.EveryKernelsTimeIsCountedUnderTheCallSiteThatLaunchedIt \
    >/tmp/gpu.log 2>&1
  rc=$?
  grep -E "^\[ +(OK|FAILED) +\]|Failure" /tmp/gpu.log | head -5
  check gpu_time "$([[ $rc == 0 ]] && echo 1 || echo 0)" "the GPU time of each kernel under the call site that launched it (fake CUPTI, agent run, server): exit $rc"
else
  check gpu_time 0 "no $gpu_test in this build"
fi
dmesg | grep -iE "out of memory|killed process|segfault|BUG:|WARNING:" | head -5
'

start=$(date +%s%N)
set +e
out=$(WS_VM_TIMEOUT=${WS_VM_TIMEOUT:-400} "$here/vm.sh" "$kernel" -- bash -c "$guest_script" guest "$build" "$src" \
      "$driver" "$expect_driver" 2>&1)
rc=$?
set -e
printf '%s\n' "$out"
echo "== $kernel${driver:+ ($driver)}: boot and checks took $((($(date +%s%N) - start) / 1000000)) ms"
[[ $rc -eq 0 ]] || { echo "FAIL: vm.sh exited $rc" >&2; exit 1; }

failures=0
want=(driver record split main deep python off_cpu launch gpu_time)
[[ -z $driver ]] && want=(doctor "${want[@]}")
for name in "${want[@]}"; do
  if grep -Eq "^== check $name ok" <<<"$out"; then
    echo "ok: $name"
  else
    echo "FAIL: $name: $(grep -E "^== check $name " <<<"$out" || echo "no result")" >&2
    failures=$((failures + 1))
  fi
done
[[ $failures -eq 0 ]]
