#!/usr/bin/env bash
# Installs the Debian packages warpscope needs; idempotent and quiet when
# nothing is missing. Usage: scripts/bootstrap.sh [extra-package-list.txt ...]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
lists=("$here/debian-packages.txt" "$@")
mapfile -t packages < <(cat "${lists[@]}" | sed -e 's/#.*//' -e 's/[[:space:]]//g' | grep -v '^$')
# Names that installed packages provide count as present (NodeSource's nodejs
# provides npm and conflicts with Debian's).
provided=" $(dpkg-query -W -f='${db:Status-Abbrev}${Provides}\n' 2>/dev/null | sed -n 's/^ii *//p' |
  tr ',' '\n' | sed -e 's/(.*)//' -e 's/[[:space:]]//g' | grep -v '^$' | tr '\n' ' ')"
missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" || "$provided" == *" $p "* ]] || missing+=("$p")
done
if [[ ${#missing[@]} -eq 0 ]]; then
  exit 0
fi
if [[ $(id -u) -ne 0 ]]; then
  echo "bootstrap: missing Debian packages: ${missing[*]}" >&2
  echo "bootstrap: run as root (sudo) to install them" >&2
  exit 1
fi
echo "bootstrap: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
