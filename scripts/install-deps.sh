#!/usr/bin/env bash
# Installs what building and testing ccltune needs on Debian 12, from Debian's packages; builds Debian's
# Abseil as PIC static archives into .deps/absl-pic (scripts/build-absl.sh). CUDA and NCCL headers come
# from the CUDA toolkit at ${CUDA_HOME:-/usr/local/cuda}, or, where it has no nccl.h, from PyPI's NVIDIA
# wheels into .deps/cuda (scripts/fetch-cuda-headers.sh).
set -euo pipefail
pkgs=(cmake g++ make libabsl-dev libgtest-dev libgmock-dev libbenchmark-dev nlohmann-json3-dev
      libopenmpi-dev openmpi-bin clang-format gnuplot-nox python3 spin clang libclang-rt-dev llvm
      libcli11-dev dpkg-dev pkgconf python3-pip file)
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
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# Abseil as PIC static archives (libccltune.so links it statically, hidden): Debian's own source, built once.
bash "$here/build-absl.sh"
# Without a CUDA toolkit (no nccl.h), NCCL's and CUDA's headers and libnccl.so.2 come from PyPI's wheels
# into .deps/cuda, which CMake uses when CUDA_HOME has no nccl.h.
cuda="${CUDA_HOME:-/usr/local/cuda}"
if [ ! -f "$cuda/include/nccl.h" ]; then
  bash "$here/fetch-cuda-headers.sh"
fi
