#!/usr/bin/env bash
# For a machine without the CUDA toolkit: NCCL's and CUDA's headers (and libnccl.so.2, which ccltune-bench
# links) from NVIDIA's wheels on PyPI, unpacked into .deps/cuda laid out like a toolkit (include/, lib64/).
# Nothing is installed system-wide; CMake falls back to .deps/cuda when CUDA_HOME has no nccl.h. The
# versions are the ones ccltune is measured with (NCCL 2.28.9, as PyTorch's CUDA 13 wheels ship it).
# Skipped when .deps/cuda already holds them.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="$repo/.deps/cuda"
# CCCL: cuda_fp16.h (which nccl.h includes) includes <nv/target>, which only the CCCL wheel has.
wheels=(nvidia-nccl-cu13==2.28.9 nvidia-cuda-runtime==13.0.96 nvidia-cuda-crt==13.0.88 nvidia-cuda-cccl==13.0.85)
stamp="${wheels[*]}"
if [[ -f "$dest/VERSION" && "$(cat "$dest/VERSION")" == "$stamp" ]]; then
  exit 0
fi
echo "fetch-cuda-headers: no nccl.h in ${CUDA_HOME:-/usr/local/cuda}; getting ${wheels[*]} from PyPI into $dest"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
python3 -m pip download --quiet --no-deps --dest "$work/wheels" "${wheels[@]}"
for w in "$work"/wheels/*.whl; do python3 -m zipfile -e "$w" "$work/x"; done
rm -rf "$dest"
mkdir -p "$dest/include" "$dest/lib64"
cp -r "$work"/x/nvidia/cu13/include/. "$dest/include/"
cp -r "$work"/x/nvidia/nccl/include/. "$dest/include/"
cp "$work"/x/nvidia/nccl/lib/libnccl.so.2 "$dest/lib64/"
ln -s libnccl.so.2 "$dest/lib64/libnccl.so"
echo "$stamp" >"$dest/VERSION"
echo "fetch-cuda-headers: done ($(du -sh "$dest" | cut -f1))"
