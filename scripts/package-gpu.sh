#!/usr/bin/env bash
# Builds libccltune.so, ccltune-bench, ccltune-drill, the ccltune tool and the fidelity recorder and
# programs here and packs them, with the shared libraries they need that a GPU host may lack (Debian's
# Abseil), into DIR (default .gpu/, ignored by git: carry it to the GPU host explicitly), for hosts where
# nothing can be installed (stripped; STRIP=0 keeps the symbols). Run there with scripts/gpu-carried-run.sh
# (bench), scripts/gpu-fidelity.sh (tuner-call traces) or scripts/gpu-faults.sh (fault drills). The host must
# provide the CUDA driver, NCCL (e.g. PyTorch's wheel), an Open MPI 4.x (libmpi.so.40, mpirun) and a glibc >=
# Debian 12's.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-.gpu}"
build="${BUILD_DIR:-build-gpu}"
# The bench's GPU kernels (--interference, the overhead mode's hold) need nvcc here: ON by default so
# a package without them cannot be made by accident (BENCH_KERNELS=AUTO|OFF to relax).
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DCCLTUNE_BUILD_TESTS=OFF \
  -DCCLTUNE_BENCH_KERNELS="${BENCH_KERNELS:-ON}" >/dev/null
cmake --build "$build" --target ccltune ccltune-bench ccltune-drill ccltune-cli fidelity-programs fidelity_recorder -j"$(nproc)"
rm -rf "$out"
mkdir -p "$out/lib" "$out/bin"
cp "$build/src/libccltune.so" "$out/lib/"
cp "$build/bench/ccltune-bench" "$build/bench/ccltune-drill" "$build/cli/ccltune" "$build/fidelity/fidelity-programs" "$out/bin/"
cp "$build/fidelity/libnccl-tuner-fidelity.so" "$out/lib/"
for f in "$build/src/libccltune.so" "$out"/bin/*; do
  ldd "$f" | awk '/libabsl_/ {print $3}' | xargs -r -I{} cp -L {} "$out/lib/"
done
# The packed copies lose their symbol tables, not their dynamic symbols (STRIP=0 keeps them): a package travels
# with the checkout, whose tracked files alone are most of what a device run may carry (57 of 64 MiB on
# 2026-12-04), and unstripped (7.5 MB; stripped 6.0 MB, the library 3.2 -> 2.5 MB) it no longer fitted beside a
# second library for an A/B. The build directory keeps the unstripped files for a backtrace.
if [ "${STRIP:-1}" = 1 ]; then
  strip --strip-unneeded "$out"/bin/* "$out"/lib/*.so*
fi
echo "package-gpu: $(du -sh "$out" | cut -f1) in $out"
