#!/usr/bin/env bash
# Boots one kernel with tests/vm/vm.sh and checks what the agent does there,
# in one boot: `doctor`, then `record --all` beside a busy loop.
#
#   tests/vm/check_kernel.sh KERNEL AGENT
#
# debian12-6.1 (bpf_loop, 5.17+): doctor's kernel line chooses the bpf_loop
# driver, and record exits 0 with samples in a non-empty profile.
# debian11-5.10 (no bpf_loop, and no driver for such kernels yet): doctor
# BLOCKs on the kernel line naming bpf_loop, and record refuses before loading
# anything, with kExitUnsupported (agent/core/cli.h) and a message naming
# bpf_loop. Needs root like the other tests that run the agent; without it,
# it prints SKIPPED and exits 0.
set -euo pipefail

[[ $# -eq 2 ]] || { echo "usage: $0 {debian12-6.1|debian11-5.10} AGENT" >&2; exit 2; }
kernel=$1 agent=$2
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [[ $(id -u) -ne 0 ]]; then
  echo "SKIPPED: booting $kernel needs root (the kernel cache in /var/cache, the agent as root)"
  exit 0
fi
[[ -x $agent ]] || { echo "FAIL: no agent at $agent" >&2; exit 1; }
unsupported=$(sed -n 's/.*kExitUnsupported = \([0-9]*\).*/\1/p' "$here/../../agent/core/cli.h")
[[ -n $unsupported ]] || { echo "FAIL: no kExitUnsupported in agent/core/cli.h" >&2; exit 1; }

# Inside the guest; section headers split the output for the checks below.
guest_script='
agent=$1
echo "== doctor"
"$agent" doctor --no-gpu-metrics --no-gpu-time 2>&1
echo "== doctor exit $?"
echo "== record"
yes >/dev/null &
"$agent" record --all --duration 3s -o /tmp/vm-profile.pb.gz 2>&1
echo "== record exit $?"
kill $!
echo "== profile bytes $(stat -c %s /tmp/vm-profile.pb.gz 2>/dev/null || echo 0)"'

start=$(date +%s%N)
set +e
out=$("$here/vm.sh" "$kernel" -- bash -c "$guest_script" guest "$agent" 2>&1)
rc=$?
set -e
printf '%s\n' "$out"
echo "== $kernel: boot and checks took $((($(date +%s%N) - start) / 1000000)) ms"
[[ $rc -eq 0 ]] || { echo "FAIL: vm.sh exited $rc" >&2; exit 1; }

doctor=$(printf '%s\n' "$out" | sed -n '/^== doctor$/,/^== doctor exit/p')
record=$(printf '%s\n' "$out" | sed -n '/^== record$/,/^== record exit/p')
failures=0
expect() {  # description, text, extended regexp
  if grep -Eq -- "$3" <<<"$2"; then echo "ok: $1"; else echo "FAIL: $1 (no match for /$3/)" >&2; failures=$((failures + 1)); fi
}
case $kernel in
  debian12-6.1)
    expect "doctor chooses the bpf_loop driver" "$doctor" '^kernel +ok +.*unwinder driver bpf_loop'
    expect "record exits 0" "$record" '^== record exit 0$'
    expect "record writes samples" "$record" ' [1-9][0-9]* samples written to /tmp/vm-profile.pb.gz'
    expect "the profile is not empty" "$out" '^== profile bytes [1-9][0-9]*$'
    ;;
  debian11-5.10)
    expect "doctor BLOCKs on the kernel, naming bpf_loop" "$doctor" '^kernel +BLOCKED +.*lacks bpf_loop'
    expect "record exits $unsupported (kExitUnsupported)" "$record" "^== record exit $unsupported\$"
    expect "record names bpf_loop" "$record" '^warpscope-agent: .*bpf_loop'
    ;;
  *) echo "FAIL: no checks for $kernel" >&2; exit 2 ;;
esac
[[ $failures -eq 0 ]]
