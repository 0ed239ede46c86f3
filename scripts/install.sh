#!/usr/bin/env bash
# Installs warpscope with systemd services, from a built tree (scripts/build.sh
# first) or from an unpacked release (scripts/release.sh; this script is in it):
#
#   sudo scripts/install.sh                        # binaries in /usr/local/bin, the CUDA
#                                                  # library in /usr/local/lib/warpscope
#   sudo scripts/install.sh --prefix /opt/warpscope
#   DESTDIR=/tmp/stage scripts/install.sh          # stage only (packaging, tests): no user,
#                                                  # no systemctl
#   sudo scripts/install.sh --uninstall            # stops and removes the services and
#                                                  # binaries; keeps data and settings
#
# Installs warpscope-server.service and warpscope-agent.service into
# /etc/systemd/system, and their settings files /etc/default/warpscope-server
# and /etc/default/warpscope-agent (kept when they exist). Without DESTDIR it
# also creates the system user warpscope (the server runs as it) and
# /etc/warpscope (for a token file), and reloads systemd. It starts nothing:
#   systemctl enable --now warpscope-server warpscope-agent
# From a release, bin/ holds the commands (wrappers that start each program
# through the release's own dynamic loader, PREFIX/libexec/warpscope-*), and
# PREFIX/lib/warpscope the programs and their libraries (docs/release.md).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

prefix=/usr/local
build=build
uninstall=0
while (( $# > 0 )); do
  case "$1" in
    --prefix) prefix="${2:?--prefix needs a directory}"; shift 2 ;;
    --build) build="${2:?--build needs a directory}"; shift 2 ;;
    --uninstall) uninstall=1; shift ;;
    -h|--help) sed -n '2,21p' "$0"; exit 0 ;;
    *) echo "install.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ "$prefix" == /* ]] || { echo "install.sh: --prefix must be an absolute path" >&2; exit 2; }
dest="${DESTDIR:-}"
if [[ -z "$dest" && $EUID -ne 0 ]]; then
  echo "install.sh: run as root (or set DESTDIR to stage the files)" >&2
  exit 3
fi

if (( uninstall )); then
  if [[ -z "$dest" && -d /run/systemd/system ]]; then
    systemctl disable --now warpscope-agent warpscope-server 2> /dev/null || true
  fi
  # Whether a build or a release was installed: the files of both.
  rm -f "$dest$prefix/bin/warpscope-server" "$dest$prefix/bin/warpscope-agent" \
    "$dest$prefix/libexec/warpscope-server" "$dest$prefix/libexec/warpscope-agent" \
    "$dest$prefix/lib/warpscope/libwarpscope_cuda.so" \
    "$dest/etc/systemd/system/warpscope-server.service" "$dest/etc/systemd/system/warpscope-agent.service"
  rm -rf "$dest$prefix/lib/warpscope/bin" "$dest$prefix/lib/warpscope/runtime" "$dest$prefix/share/doc/warpscope"
  rmdir "$dest$prefix/lib/warpscope" "$dest$prefix/libexec" 2> /dev/null || true
  if [[ -z "$dest" && -d /run/systemd/system ]]; then systemctl daemon-reload; fi
  echo "install.sh: removed the services and binaries from ${dest:-/}; kept /etc/default/warpscope-{server,agent},"
  echo "  /etc/warpscope, the data in /var/lib/warpscope and /var/lib/warpscope-agent, and the user warpscope"
  exit 0
fi

cuda_lib=""
if [[ -d lib/warpscope/runtime ]]; then
  # An unpacked release: its tree as it is, under the prefix. `install`
  # replaces each file by a new one, so running programs keep theirs.
  while IFS= read -r -d '' f; do
    case "$f" in
      bin/*|libexec/*|lib/warpscope/bin/*) mode=0755 ;;
      *) mode=0644 ;;
    esac
    install -D -m "$mode" "$f" "$dest$prefix/$f"
  done < <(find bin libexec lib/warpscope share -type f -print0)
  [[ -f lib/warpscope/libwarpscope_cuda.so ]] && cuda_lib="$prefix/lib/warpscope/libwarpscope_cuda.so"
else
  for f in bin/warpscope-agent bin/warpscope-server; do
    [[ -x "$build/$f" ]] || { echo "install.sh: $build/$f is missing: build first (scripts/build.sh)" >&2; exit 1; }
  done
  install -D -m 0755 "$build/bin/warpscope-server" "$dest$prefix/bin/warpscope-server"
  install -D -m 0755 "$build/bin/warpscope-agent" "$dest$prefix/bin/warpscope-agent"
  if [[ -f "$build/lib/libwarpscope_cuda.so" ]]; then
    cuda_lib="$prefix/lib/warpscope/libwarpscope_cuda.so"
    install -D -m 0644 "$build/lib/libwarpscope_cuda.so" "$dest$cuda_lib"
  fi
fi

for service in warpscope-server warpscope-agent; do
  unit=$(sed "s#@BINDIR@#$prefix/bin#g" "deploy/systemd/$service.service.in")
  install -D -m 0644 /dev/stdin "$dest/etc/systemd/system/$service.service" <<< "$unit"
  if [[ -e "$dest/etc/default/$service" ]]; then
    echo "install.sh: kept /etc/default/$service"
  else
    install -D -m 0644 "deploy/systemd/$service.default" "$dest/etc/default/$service"
  fi
done

if [[ -z "$dest" ]]; then
  if ! getent passwd warpscope > /dev/null; then
    useradd --system --user-group --no-create-home --home-dir /var/lib/warpscope --shell /usr/sbin/nologin warpscope
  fi
  install -d -m 0750 -g warpscope /etc/warpscope
  if [[ -d /run/systemd/system ]]; then systemctl daemon-reload; fi
fi

cat <<MSG
install.sh: installed into ${dest:-/}: $prefix/bin/warpscope-server, $prefix/bin/warpscope-agent${cuda_lib:+, $cuda_lib},
  /etc/systemd/system/warpscope-{server,agent}.service, settings in /etc/default/warpscope-{server,agent}.
Start both (the server keeps its data in /var/lib/warpscope; UI on http://127.0.0.1:7070/):
  systemctl enable --now warpscope-server warpscope-agent
MSG
if [[ -n "$cuda_lib" ]]; then
  echo "GPU time: start CUDA programs with CUDA_INJECTION64_PATH=$cuda_lib"
fi
