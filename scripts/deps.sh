#!/usr/bin/env bash
# Installs the Debian packages latscope needs; silent when all are present.
set -euo pipefail
pkgs=(make gcc pkg-config libbpf-dev bpftool clang llvm liburing-dev libcurl4-openssl-dev
      libcjson-dev libssl-dev libelf-dev zlib1g-dev libcriterion-dev curl iproute2 openssl procps
      libjs-chart.js chromium libopenmpi-dev openmpi-bin python3-aiohttp nginx
      git cmake g++ python3-numpy python3-yaml) # the last line: the engine (scripts/engine.sh; npm: nodejs)
missing=()
pkgs+=(groff-base man-db) # the man pages and their check (make man, tests/integration/readme_manual.sh)
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
  echo "latscope: missing packages: ${missing[*]}; run 'make deps' as root or: sudo apt-get install ${missing[*]}" >&2
  exit 1
fi
echo "latscope: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
