#!/usr/bin/env bash
# NVIDIA's nccl-tests with and without ccltune preloaded, interleaved, on a GPU host. nccl-tests is built
# there from its own source beforehand (see docs/results/nccl-tests-testbed.md; never committed here): this
# script only runs its binaries. ROUNDS rounds; in each, for each collective, one launch without ccltune
# and one with it, the order alternating from round to round (off,on then on,off), so that drift over the
# session falls on both arms alike. Each launch is one nccl-tests program over SIZES: nccl-tests warms every
# size up WARMUP calls (its -w; long enough for ccltune's search to converge), then times ITERS calls
# out-of-place and ITERS in-place, data checked (-c 1). With ccltune, CCLTUNE_EXPORT writes the tuned table
# of the launch and rank 0 prints its exit summary into the launch's log.
#
# usage: scripts/gpu-testbed.sh -n 4 run scripts/gpu-nccl-tests-ab.sh BIN_DIR LIBCCLTUNE OUT
#        (or without the testbed: NP ranks, one per GPU)
# env:   ROUNDS (3), COLLS ("all_reduce all_gather reduce_scatter"), SIZES ("-b 64K -e 16M -f 4"),
#        WARMUP (200), ITERS (40), NCCL_LIB_DIR (default: PyTorch's wheel)
# Then: python3 bench/nccl_tests_report.py OUT
set -euo pipefail
if [ $# -ne 3 ]; then
  sed -n '11,15p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
bin="$(cd "$1" && pwd)"
lib="$(cd "$(dirname "$2")" && pwd)/$(basename "$2")"
out="$3"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
rounds="${ROUNDS:-3}"
colls="${COLLS:-all_reduce all_gather reduce_scatter}"
read -r -a sizes <<<"${SIZES:--b 64K -e 16M -f 4}"
warmup="${WARMUP:-200}"
iters="${ITERS:-40}"
nccl_dir="${NCCL_LIB_DIR:-$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib"))' 2>/dev/null || echo /usr/local/cuda/lib64)}"
np="${NP:-$(nvidia-smi -L | wc -l)}"
[ -f "$lib" ] || { echo "gpu-nccl-tests-ab: no $lib" >&2; exit 2; }
for c in $colls; do
  [ -x "$bin/${c}_perf" ] || { echo "gpu-nccl-tests-ab: no $bin/${c}_perf" >&2; exit 2; }
done
root=()
[ "$(id -u)" = 0 ] && root=(--allow-run-as-root)
launcher=()
if [ -n "${TESTBED_LAUNCHER:-}" ]; then
  launcher=("$TESTBED_LAUNCHER")
  # nccl-tests picks GPU (local rank x GPUs per process); on the testbed every rank uses GPU 0.
  export NCCL_TESTS_DEVICE="${NCCL_TESTS_DEVICE:-0}"
fi
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export LD_LIBRARY_PATH="$nccl_dir:${LD_LIBRARY_PATH:-}"

# One launch: ARM is off or on; the log and, with ccltune, the export land in OUT.
launch() {
  local round=$1 coll=$2 arm=$3
  local name="r${round}-${coll}-${arm}"
  local extra=()
  if [ "$arm" = on ]; then
    extra=(-x CCLTUNE_EXPORT="$out/$name.json")
    if [ ${#launcher[@]} -gt 0 ]; then
      extra+=(-x TESTBED_PRELOAD="$lib")
    else
      extra+=(-x LD_PRELOAD="$lib")
    fi
  else
    extra=(-x TESTBED_PRELOAD=)
  fi
  echo "gpu-nccl-tests-ab: round $round $coll ccltune $arm"
  local t0
  t0=$(date +%s)
  set +e
  mpirun -np "$np" --oversubscribe --bind-to none "${root[@]}" \
    -x NCCL_NVLS_ENABLE -x TORCH_SYMM_MEM_DISABLE_MULTICAST -x NVSHMEM_DISABLE_NVLS -x LD_LIBRARY_PATH \
    $(env | grep -oE '^(CCLTUNE|NCCL|CUDA_MPS)_[A-Z_]+' | sed 's/^/-x /') "${extra[@]}" \
    "${launcher[@]}" "$bin/${coll}_perf" "${sizes[@]}" -w "$warmup" -n "$iters" -c 1 >"$out/$name.log" 2>&1
  local rc=$?
  set -e
  echo "gpu-nccl-tests-ab: $name exit $rc in $(($(date +%s) - t0)) s"
  [ $rc = 0 ] || tail -20 "$out/$name.log"
}

for ((r = 1; r <= rounds; r++)); do
  for c in $colls; do
    if ((r % 2 == 1)); then
      launch "$r" "$c" off
      launch "$r" "$c" on
    else
      launch "$r" "$c" on
      launch "$r" "$c" off
    fi
  done
done
