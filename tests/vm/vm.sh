#!/usr/bin/env bash
# Runs one command as root inside a Debian kernel booted in QEMU, with this
# machine's whole file system visible at the same paths, so the binaries just
# built run unchanged against an older kernel.
#
#   tests/vm/vm.sh KERNEL -- COMMAND [ARGS...]
#
# KERNEL is debian11-5.10 or debian12-6.1 (x86-64 guests), or
# debian11-5.10-arm64 or debian12-6.1-arm64 (arm64 guests, `-M virt -cpu
# max,pauth-impdef=on`). The command runs in the caller's
# working directory with a clean environment (PATH, HOME); its stdout and
# stderr come back on ours, and its exit code is ours (124: the VM timed out,
# 125: the VM could not be made or did not finish the command).
# An arm64 guest cannot run this machine's binaries: its root is the folder
# WS_VM_ROOT names (arm64 packages unpacked, tests/vm/arm64_root.sh), shared
# the same way; without one, the command runs in the initramfs's busybox.
#
# To run one kernel: as root, with the Debian packages qemu-system-x86
# busybox-static kmod cpio xz-utils zstd (scripts/bootstrap.sh installs them),
#
#   tests/vm/vm.sh debian11-5.10 -- build/bin/warpscope-agent doctor --no-gpu-metrics --no-gpu-time
#
# The first run for a kernel downloads its Debian package with a private apt
# configuration (the host's sources stay as they are), unpacks the ELF vmlinux
# from the bzImage and builds an initramfs of static busybox and the kernel's
# own virtio, 9p and overlay modules, all under
# ${WS_VM_CACHE:-/var/cache/warpscope-vm} (about 10 s; delete a kernel's
# folder there to fetch it again). Later runs boot and answer in about 3 s.
# QEMU emulates the CPU (TCG, one vCPU), which works where /dev/kvm boots only
# PVM kernels, as on the CI machines; code runs 5-15x slower than on the host,
# under real-time clocks. The host's / is shared read-only through 9p, under
# an overlay whose writes stay in the guest's memory and vanish with it; proc,
# sysfs, devtmpfs, bpffs, debugfs and tracefs are mounted, /run is a tmpfs,
# the loopback interface is up.
# WS_VM_TIMEOUT (seconds, default 300) bounds the whole run.
set -euo pipefail

die() { echo "vm.sh: $*" >&2; exit 125; }
usage() { echo "usage: $0 {debian11-5.10|debian12-6.1}[-arm64] -- COMMAND [ARGS...]" >&2; exit 2; }

[[ $# -ge 3 && $2 == -- ]] || usage
kernel=$1; shift 2
arch=amd64
case $kernel in
  debian11-5.10) package=linux-image-5.10.0-46-amd64-unsigned series=5.10 ;;
  debian12-6.1) package=linux-image-6.1.0-50-amd64-unsigned series=6.1 ;;
  # bullseye-security has no arm64 5.10 images: bullseye's own.
  debian11-5.10-arm64) package=linux-image-5.10.0-32-arm64-unsigned series=5.10 arch=arm64 ;;
  debian12-6.1-arm64) package=linux-image-6.1.0-50-arm64-unsigned series=6.1 arch=arm64 ;;
  *) usage ;;
esac
qemu=qemu-system-x86_64:qemu-system-x86
[[ $arch == arm64 ]] && qemu=qemu-system-aarch64:qemu-system-arm
cache=${WS_VM_CACHE:-/var/cache/warpscope-vm}
timeout_s=${WS_VM_TIMEOUT:-300}

for tool in "$qemu" cpio:cpio modprobe:kmod depmod:kmod \
            xz:xz-utils zstd:zstd apt-get:apt dpkg-deb:dpkg flock:util-linux; do
  command -v "${tool%%:*}" >/dev/null || die "${tool%%:*} not found (Debian package ${tool#*:})"
done
if [[ ! -x /bin/busybox ]] || ldd /bin/busybox >/dev/null 2>&1; then
  die "/bin/busybox is missing or not static (Debian package busybox-static)"
fi

# The ELF kernel inside a bzImage, found as the kernel's scripts/extract-vmlinux
# finds it: at each compression magic, decompress and keep the first ELF.
extract_vmlinux() {  # bzImage output
  local magic_cmd magic cmd offset
  for magic_cmd in '\xfd7zXZ\x00:xz -dc' '\x28\xb5\x2f\xfd:zstd -dcq' '\x1f\x8b\x08:gzip -dc'; do
    magic=${magic_cmd%%:*} cmd=${magic_cmd#*:}
    for offset in $(LC_ALL=C grep -obUaP "$magic" "$1" | cut -d: -f1); do
      tail -c +$((offset + 1)) "$1" | $cmd >"$2" 2>/dev/null || true
      [[ $(head -c 4 "$2" | od -An -c | tr -d ' ') == 177ELF ]] && return 0
    done
  done
  die "no ELF kernel found inside $1"
}

# Downloads the kernel package (the newest ABI of the same series if that one
# left the mirror) and builds vmlinux and initramfs.cpio into $cache/$kernel.
fetch_kernel() {
  local apt=$cache/apt work=$cache/$kernel.tmp
  mkdir -p "$apt"/{state/lists/partial,cache/archives/partial,parts}
  touch "$apt/status"
  cat >"$apt/sources.list" <<'EOF'
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bookworm main
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian-security bookworm-security main
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian-security bullseye-security main
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bullseye main
EOF
  local opts=(-o Dir::Etc::sourcelist="$apt/sources.list" -o Dir::Etc::sourceparts="$apt/parts"
              -o Dir::State="$apt/state" -o Dir::State::status="$apt/status" -o Dir::Cache="$apt/cache"
              -o APT::Sandbox::User=root -o Debug::NoLocking=1 -o APT::Architecture=amd64
              -o APT::Architectures::=amd64 -o APT::Architectures::=arm64)
  apt-get "${opts[@]}" -qq --error-on=any update >&2 || die "apt-get update failed (private sources in $apt/sources.list)"
  available() { [[ -n $(apt-cache "${opts[@]}" madison "$1" 2>/dev/null) ]]; }
  if ! available "$package"; then
    local want=$package name
    package=""
    for name in $(apt-cache "${opts[@]}" pkgnames "linux-image-$series.0-" | sort -rV |
                  grep -E "^linux-image-${series/./\\.}\.0-[0-9]+-$arch-unsigned\$"); do
      available "$name" && package=$name && break
    done
    [[ -n $package ]] || die "neither $want nor another linux-image-$series.0-*-$arch-unsigned is on the mirror"
    echo "vm.sh: $want is gone from the mirror; using $package" >&2
  fi
  rm -rf "$work" && mkdir -p "$work/root" "$work/initramfs"/{bin,dev,proc,sys,io,mods}
  (cd "$work" && apt-get "${opts[@]}" -qq download "$package:$arch" >&2) || die "downloading $package failed"
  dpkg-deb --fsys-tarfile "$work"/*.deb | tar -x -C "$work/root" --wildcards './boot/vmlinuz-*' '*/modules/*' ||
    die "unpacking $package failed"
  local release moddir
  release=$(basename "$(echo "$work"/root/boot/vmlinuz-*)"); release=${release#vmlinuz-}
  moddir=$(dirname "$(echo "$work"/root/*lib/modules/"$release"/modules.order)")
  if [[ $arch == arm64 ]]; then
    # arm64's vmlinuz is the gzip-compressed Image, which QEMU boots unpacked.
    gzip -dc "$work/root/boot/vmlinuz-$release" >"$work/vmlinux" 2>/dev/null ||
      cp "$work/root/boot/vmlinuz-$release" "$work/vmlinux"
  else
    extract_vmlinux "$work/root/boot/vmlinuz-$release" "$work/vmlinux"
  fi
  depmod -b "${moddir%/lib/modules/*}" "$release"
  # The modules a 9p root needs, dependencies first; .ko.xz/.ko.zst unpacked.
  local modules list="" module name
  modules=$(modprobe -d "${moddir%/lib/modules/*}" -S "$release" --show-depends -a virtio_pci 9pnet_virtio 9p overlay |
            awk '$1 == "insmod" && !seen[$2]++ { print $2 }') || die "$package lacks a module for a 9p root"
  for module in $modules; do
    name=$(basename "$module"); name=${name%%.ko*}.ko
    case $module in
      *.xz) xz -dc "$module" ;; *.zst) zstd -dcq "$module" ;; *) cat "$module" ;;
    esac >"$work/initramfs/mods/$name"
    list+="$name "
  done
  if [[ $arch == arm64 ]]; then
    # The guest's own busybox: Debian's static arm64 build.
    (cd "$work" && apt-get "${opts[@]}" -qq download busybox-static:arm64 >&2) || die "downloading busybox-static:arm64 failed"
    mkdir -p "$work/busybox" && dpkg-deb -x "$work"/busybox-static_*_arm64.deb "$work/busybox"
    cp "$work/busybox/bin/busybox" "$work/initramfs/bin/busybox"
  else
    cp /bin/busybox "$work/initramfs/bin/busybox"
  fi
  # The initramfs only loads the modules and mounts the share; what runs next
  # is /io/guest.sh, written afresh by every run.
  cat >"$work/initramfs/init" <<EOF
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t devtmpfs dev /dev && exec </dev/console >/dev/console 2>&1
mount -t proc proc /proc && mount -t sysfs sys /sys
for m in $list; do insmod /mods/\$m || echo "init: insmod \$m failed"; done
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 io /io && exec sh /io/guest.sh
echo "init: no 9p share"; poweroff -f
EOF
  chmod +x "$work/initramfs/init"
  (cd "$work/initramfs" && find . | cpio -o -H newc --quiet >"$work/initramfs.cpio")
  mkdir -p "$cache/$kernel"
  echo "$package $release" >"$cache/$kernel/package"
  mv "$work/vmlinux" "$work/initramfs.cpio" "$cache/$kernel/"
  rm -rf "$work"
  echo "vm.sh: $kernel is $package ($release), cached in $cache/$kernel" >&2
}

mkdir -p "$cache" || die "cannot create $cache (set WS_VM_CACHE)"
exec 9>"$cache/lock" && flock 9
[[ -f $cache/$kernel/vmlinux && -f $cache/$kernel/initramfs.cpio ]] || fetch_kernel
flock -u 9

io=$(mktemp -d "${TMPDIR:-/tmp}/ws-vm.XXXXXX")
trap 'rm -rf "$io"' EXIT
# The guest's root: this machine's / for an x86-64 guest; for arm64, the
# folder of arm64 packages WS_VM_ROOT names, or none (busybox only).
root=/
if [[ $arch == arm64 ]]; then
  root=${WS_VM_ROOT:-}
  [[ -z $root || -x $root/bin/bash ]] || die "WS_VM_ROOT=$root has no bin/bash (tests/vm/arm64_root.sh)"
  [[ -n $root ]] && root=$(cd "$root" && pwd)
fi
# The command, quoted for bash, runs in the host's root with a clean environment.
{ printf 'cd -- %q 2>/dev/null || { echo "vm.sh: no %q in the guest; running in /" >&2; cd /; }\n' "$PWD" "$PWD"
  printf 'exec'; printf ' %q' "$@"; printf '\n'; } >"$io/command.sh"
if [[ -z $root ]]; then
  # No root to share: busybox runs the command in the initramfs.
  cat >"$io/guest.sh" <<'EOF'
mount -t bpf bpf /sys/fs/bpf 2>/dev/null; mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
sh -c "$(cat /io/command.sh)" </dev/null >/io/stdout 2>/io/stderr
echo $? >/io/rc.tmp && mv /io/rc.tmp /io/rc
sync; poweroff -f
EOF
else
cat >"$io/guest.sh" <<'EOF'
mkdir -p /ro /rw /host
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144,cache=loose,ro hostroot /ro || poweroff -f
mount -t tmpfs rw /rw && mkdir /rw/upper /rw/work
mount -t overlay -o lowerdir=/ro,upperdir=/rw/upper,workdir=/rw/work overlay /host || poweroff -f
mount -t proc proc /host/proc && mount -t sysfs sys /host/sys && mount -t devtmpfs dev /host/dev
mount -t bpf bpf /host/sys/fs/bpf && mount -t debugfs debugfs /host/sys/kernel/debug
mount -t tracefs tracefs /host/sys/kernel/tracing && mount -t tmpfs run /host/run
ln -s /proc/self/fd /host/dev/fd  # bash's process substitution
ip link set lo up                 # loopback: a server and its clients in the guest
chroot /host /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
  /bin/bash -c "$(cat /io/command.sh)" </dev/null >/io/stdout 2>/io/stderr
echo $? >/io/rc.tmp && mv /io/rc.tmp /io/rc
sync; poweroff -f
EOF
fi

machine=(qemu-system-x86_64 -accel tcg -cpu max) console=ttyS0
if [[ $arch == arm64 ]]; then
  # pauth-impdef: the same pointer authentication at a third of QARMA's cost.
  machine=(qemu-system-aarch64 -accel tcg -M virt -cpu max,pauth-impdef=on) console=ttyAMA0
fi
share=()
[[ -n $root ]] && share=(-virtfs "local,path=$root,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap")
set +e
timeout -k 5 "$timeout_s" "${machine[@]}" -smp 1 -m 1024 -nodefaults -no-user-config \
  -display none -serial "file:$io/console.log" -no-reboot \
  -kernel "$cache/$kernel/vmlinux" -initrd "$cache/$kernel/initramfs.cpio" \
  -append "console=$console panic=-1 quiet" \
  "${share[@]}" -virtfs "local,path=$io,mount_tag=io,security_model=none" </dev/null
qemu_rc=$?
set -e
[[ -f $io/stdout ]] && cat "$io/stdout"
[[ -f $io/stderr ]] && cat "$io/stderr" >&2
if [[ -f $io/rc ]]; then
  exit "$(cat "$io/rc")"
fi
if [[ $qemu_rc == 124 || $qemu_rc == 137 ]]; then
  echo "vm.sh: $kernel timed out after ${timeout_s}s (WS_VM_TIMEOUT); the guest's console:" >&2
  tail -n 40 "$io/console.log" >&2 || true
  exit 124
fi
echo "vm.sh: the command did not finish in $kernel (QEMU exited $qemu_rc); the guest's console:" >&2
tail -n 40 "$io/console.log" >&2 || true
exit 125
