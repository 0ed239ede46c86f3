#!/usr/bin/env bash
# Builds the two container images from the binaries in build/ (scripts/build.sh
# first), FROM scratch with podman: no base image and no registry, only the
# binaries and the Debian libraries they link.
#
#   sudo scripts/images.sh                 # localhost/warpscope-{agent,server}:VERSION and :latest,
#                                          # saved as build/images/warpscope-{agent,server}-VERSION.oci.tar
#   scripts/images.sh --build DIR --out DIR --version V --no-save
#
# Load an archive elsewhere with `podman load -i F`, `docker load -i F` or
# `ctr images import F`. The images (docs/deploy.md):
#   warpscope-agent   /usr/bin/warpscope-agent (entry point), the CUDA injection
#                     library in /usr/lib/warpscope, CA certificates; runs as root,
#                     privileged, in the host PID namespace
#   warpscope-server  /usr/bin/warpscope-server (entry point, the web UI inside),
#                     user 65534, made for a read-only root file system: it writes
#                     only /data (a volume) and reads its token from /run/secrets
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

build=build
out=""
version=""
save=1
while (( $# > 0 )); do
  case "$1" in
    --build) build="${2:?--build needs a directory}"; shift 2 ;;
    --out) out="${2:?--out needs a directory}"; shift 2 ;;
    --version) version="${2:?--version needs a value}"; shift 2 ;;
    --no-save) save=0; shift ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) echo "images.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
out="${out:-$build/images}"
for f in bin/warpscope-agent bin/warpscope-server; do
  [[ -x "$build/$f" ]] || { echo "images.sh: $build/$f is missing: build first (scripts/build.sh)" >&2; exit 1; }
done
scripts/bootstrap.sh
# shellcheck source=scripts/podman-env.sh
source scripts/podman-env.sh
version="${version:-$("$build/bin/warpscope-agent" --version | awk '{print $2}')}"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Copies FILE into ROOT at PATH (stripped of debug information when it is an
# ELF file), then every shared library it links and the ELF interpreter, at
# the absolute paths the loader looks for them.
copy_elf() {
  local root=$1 file=$2 path=$3
  mkdir -p "$root$(dirname "$path")"
  objcopy --strip-debug "$file" "$root$path"
  local lib
  ldd "$file" | awk '/=> \//{print $3} /^[[:space:]]*\//{print $1}' | while read -r lib; do
    [[ -e "$root$lib" ]] && continue
    mkdir -p "$root$(dirname "$lib")"
    objcopy --strip-debug "$(readlink -f "$lib")" "$root$lib"
  done
}

# What both images need besides their program: users (root, nobody), CA
# certificates for https servers, /tmp, /run/secrets for a token file, and
# warpscope's licence.
base_rootfs() {
  local root=$1
  mkdir -p "$root/etc/ssl/certs" "$root/run/secrets" "$root/tmp"
  chmod 1777 "$root/tmp"
  printf 'root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n' > "$root/etc/passwd"
  printf 'root:x:0:\nnogroup:x:65534:\n' > "$root/etc/group"
  install -D -m 0644 LICENSE "$root/usr/share/doc/warpscope/LICENSE"
  if [[ -f /etc/ssl/certs/ca-certificates.crt ]]; then
    cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/"
  fi
}

agent_root="$work/agent/root"
base_rootfs "$agent_root"
copy_elf "$agent_root" "$build/bin/warpscope-agent" /usr/bin/warpscope-agent
if [[ -f "$build/lib/libwarpscope_cuda.so" ]]; then
  copy_elf "$agent_root" "$build/lib/libwarpscope_cuda.so" /usr/lib/warpscope/libwarpscope_cuda.so
else
  echo "images.sh: $build/lib/libwarpscope_cuda.so is missing (built when the CUDA toolkit is present): the agent image has no GPU time injection library" >&2
fi
mkdir -p "$agent_root/var/lib/warpscope-agent" "$agent_root/run/warpscope"

server_root="$work/server/root"
base_rootfs "$server_root"
copy_elf "$server_root" "$build/bin/warpscope-server" /usr/bin/warpscope-server
mkdir -p "$server_root/data"
chown 65534:65534 "$server_root/data"
chmod 0750 "$server_root/data"

mkdir -p "$out"
for image in agent server; do
  # ADD of a local tar keeps owners and modes (COPY would make /data root's).
  tar --numeric-owner -C "$work/$image/root" -cf "$work/$image/rootfs.tar" .
  podman build --quiet --pull=never --build-arg "VERSION=$version" \
    -f "deploy/container/$image.Containerfile" \
    -t "localhost/warpscope-$image:$version" -t "localhost/warpscope-$image:latest" "$work/$image" > /dev/null
  size=$(podman image inspect --format '{{.Size}}' "localhost/warpscope-$image:$version")
  line="images.sh: localhost/warpscope-$image:$version (and :latest), $((size / 1000000)) MB"
  if (( save )); then
    archive="$out/warpscope-$image-$version.oci.tar"
    rm -f "$archive"
    podman save --quiet --format oci-archive -o "$archive" "localhost/warpscope-$image:$version"
    line+=", saved as $archive"
  fi
  echo "$line"
done
