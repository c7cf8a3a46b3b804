#!/usr/bin/env bash
# The whole test suite: installs dependencies, builds, checks formatting, runs every test under ctest
# (unit tests, simulated-cluster tests under mpirun; GPU tests skip themselves without a GPU), then a
# short fuzz run of every parser of outside input (scripts/fuzz.sh; FUZZ_SECONDS per target, 0 skips).
set -euo pipefail
cd "$(dirname "$0")"
bash scripts/install-deps.sh
build="${BUILD_DIR:-build}"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCCLTUNE_CUDA_HOME="${CUDA_HOME:-/usr/local/cuda}" >/dev/null
cmake --build "$build" -j"$(nproc)"
bash scripts/check-format.sh
cd "$build"
ctest --output-on-failure -j1 --timeout 600 "$@"
cd - >/dev/null
if [ "${FUZZ_SECONDS:-20}" != 0 ]; then bash scripts/fuzz.sh "${FUZZ_SECONDS:-20}"; fi
