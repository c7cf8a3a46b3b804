#!/usr/bin/env bash
# Installs what building and testing ccltune needs on Debian 12, from Debian's packages. CUDA and
# NCCL headers come from the CUDA toolkit at ${CUDA_HOME:-/usr/local/cuda} (not installed here).
set -euo pipefail
pkgs=(cmake g++ make libabsl-dev libgtest-dev libgmock-dev libbenchmark-dev nlohmann-json3-dev
      libopenmpi-dev openmpi-bin clang-format gnuplot-nox python3 spin clang libclang-rt-dev llvm)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
cuda="${CUDA_HOME:-/usr/local/cuda}"
if [ ! -f "$cuda/include/nccl.h" ]; then
  echo "install-deps: $cuda/include/nccl.h not found: install the CUDA toolkit with NCCL, or set CUDA_HOME" >&2
  exit 1
fi
