#!/usr/bin/env bash
# ccltune-bench on the simulated cluster: builds what it needs (libccltune.so, the simulated
# libnccl.so.2, ccltune-bench) into build/ and runs the bench under mpirun with ccltune preloaded and
# the simulated NCCL in place of the real one. Usage: [NP=4] [BUILD=dir] [PRELOAD=0] bench/sim.sh [bench args]
# (PRELOAD=0: without ccltune).
# The exit status is the bench's (non-zero on any data-check or consistency mismatch).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BUILD:-${repo}/build}"

bash "${repo}/scripts/configure.sh" "${build}"
cmake --build "${build}" --target ccltune simnccl ccltune-bench -j2 >/dev/null

mpi_args=(-np "${NP:-4}" --oversubscribe)
if [[ "$(id -u)" == 0 ]]; then
  mpi_args+=(--allow-run-as-root)
fi
# Pass every SIMNCCL_* and CCLTUNE_* variable of this shell through to the ranks.
for var in $(compgen -e | grep -E '^(SIMNCCL|CCLTUNE)_' || true); do
  mpi_args+=(-x "${var}")
done

if [[ "${PRELOAD:-1}" == 1 ]]; then
  mpi_args+=(-x LD_PRELOAD="${build}/src/libccltune.so")
fi

set +e
mpirun "${mpi_args[@]}" \
  -x LD_LIBRARY_PATH="${build}/simnccl:${LD_LIBRARY_PATH:-}" \
  "${build}/bench/ccltune-bench" "$@"
status=$?
exit "${status}"
