#!/usr/bin/env bash
# The search on the simulated cluster over several seeds, tallied against issue 12's bars: for each seed
# the 4-rank bench (--mode compare,oracle, all-reduce/all-gather/reduce-scatter 64 KiB-16 MiB) on a
# recorded landscape with its fitted noise, then bench/search_tally.py over the seeds' JSONs (the bars in the
# oracle's rounds, and on the recorded table's own times: --model).
# Usage: [SEEDS="1 2 ... 16"] [MODEL=tests/data/landscapes/testbed-4r] [OUT=dir] [LIB=libccltune.so]
#        scripts/sim-search-seeds.sh [extra bench args]
# MODEL is a recorded table's prefix (MODEL.txt, and noise-<name>.txt beside it where there is one).
# LIB (default: the build's) lets two builds be compared seed by seed on the same simulated cluster.
# Each seed's JSON and output go to OUT (default: a new temporary directory, printed).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BUILD:-${repo}/build}"
seeds="${SEEDS:-$(seq -s ' ' 1 16)}"
model="${MODEL:-${repo}/tests/data/landscapes/testbed-4r}"
out="${OUT:-$(mktemp -d /tmp/sim-search-seeds.XXXXXX)}"
mkdir -p "${out}"
bash "${repo}/scripts/configure.sh" "${build}"
cmake --build "${build}" --target ccltune simnccl ccltune-bench -j2 >/dev/null
lib="${LIB:-${build}/src/libccltune.so}"

noise="$(dirname "${model}")/noise-$(basename "${model}").txt"
mpi_args=(-np 4 --oversubscribe -x SIMNCCL_MODEL_FILE="${model}.txt" -x LD_PRELOAD="${lib}"
  -x LD_LIBRARY_PATH="${build}/simnccl:${LD_LIBRARY_PATH:-}")
[[ -f "${noise}" ]] && mpi_args+=(-x SIMNCCL_NOISE_MODEL="${noise}")
[[ "$(id -u)" == 0 ]] && mpi_args+=(--allow-run-as-root)
for var in $(compgen -e | grep -E '^(SIMNCCL|CCLTUNE)_' || true); do
  mpi_args+=(-x "${var}")
done

echo "sim-search-seeds: model ${model}, seeds ${seeds}, library ${lib}, output ${out}"
jsons=()
for s in ${seeds}; do
  if ! mpirun "${mpi_args[@]}" -x SIMNCCL_SEED="${s}" "${build}/bench/ccltune-bench" --json "${out}/seed-${s}.json" \
    -c allreduce,allgather,reducescatter -b 64K -e 16M -f 4 --mode compare,oracle -n 300 "$@" \
    >"${out}/seed-${s}.txt" 2>&1; then
    echo "sim-search-seeds: seed ${s} failed; its output: ${out}/seed-${s}.txt" >&2
    exit 1
  fi
  jsons+=("${out}/seed-${s}.json")
done
python3 "${repo}/bench/search_tally.py" --model "${model}.txt" "${jsons[@]}"
