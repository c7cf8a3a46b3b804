#!/usr/bin/env bash
# The whole test suite: installs dependencies, builds, checks formatting, runs every test under ctest
# (unit tests, simulated-cluster tests under mpirun; GPU tests skip themselves without a GPU), then a
# short fuzz run of every parser of outside input (scripts/fuzz.sh; FUZZ_SECONDS per target, 0 skips),
# then the ASan + UBSan and TSan builds of the unit, simulated-cluster and chaos tests (scripts/sanitize.sh;
# SANITIZE=0 skips, SANITIZE=address or thread runs one).
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
case "${SANITIZE:-1}" in
  0) ;;
  1) bash scripts/sanitize.sh ;;
  *) bash scripts/sanitize.sh "$SANITIZE" ;;
esac
