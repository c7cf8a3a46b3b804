#!/usr/bin/env bash
# Records the tuner-plugin calls NCCL makes for the fidelity programs (tests/fidelity/programs.cc): one
# process per GPU under mpirun, the recording plugin (tests/fidelity/recorder_tuner.cc) loaded through
# NCCL_TUNER_PLUGIN, nothing built here. Runs from a package made by scripts/package-gpu.sh on a GPU host,
# and unchanged against the simulated NCCL (NCCL_LIB_DIR=build/simnccl, PROGRAM/RECORDER from build/fidelity).
# Environment:
#   OUT           directory for the results (required; its earlier traces are replaced)
#   PKG           package directory (default .gpu)
#   NCCL_LIB_DIR  directory holding libnccl.so.2 (default: PyTorch's wheel, else /usr/local/cuda/lib64)
#   NP            ranks (default 4)
#   PROGRAM, RECORDER  override the package's bin/fidelity-programs and lib/libnccl-tuner-fidelity.so
#   FIDELITY_TIMEOUT_S  limit for the mpirun (default 150)
#   TESTBED_LAUNCHER    set by scripts/gpu-testbed.sh run (the one-GPU testbed): each rank starts through it
# Writes to OUT: fidelity.trace (all ranks, the file to commit), trace.<rank> (per rank, as recorded),
# run.log (the programs' output), nccl-debug.<host>.<pid> (NCCL_DEBUG=INFO, real NCCL only).
set -euo pipefail
cd "$(dirname "$0")/.."
die() {
  echo "gpu-fidelity: $*" >&2
  exit 2
}
[ -n "${OUT:-}" ] || die "set OUT to the directory for the traces"
pkg="${PKG:-.gpu}"
program="${PROGRAM:-$pkg/bin/fidelity-programs}"
recorder="${RECORDER:-$pkg/lib/libnccl-tuner-fidelity.so}"
[ -x "$program" ] || die "no program at $program (run scripts/package-gpu.sh here first, or set PROGRAM)"
[ -f "$recorder" ] || die "no recording plugin at $recorder (run scripts/package-gpu.sh, or set RECORDER)"
program="$(cd "$(dirname "$program")" && pwd)/$(basename "$program")"
recorder="$(cd "$(dirname "$recorder")" && pwd)/$(basename "$recorder")"
nccl_dir="${NCCL_LIB_DIR:-$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib"))' 2>/dev/null || echo /usr/local/cuda/lib64)}"
[ -e "$nccl_dir/libnccl.so.2" ] || die "no libnccl.so.2 in $nccl_dir (set NCCL_LIB_DIR)"
nccl_dir="$(cd "$nccl_dir" && pwd)"
np="${NP:-4}"
libpath="$nccl_dir"
[ -d "$pkg/lib" ] && libpath="$(cd "$pkg/lib" && pwd):$libpath"
libpath="$libpath${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if missing=$(LD_LIBRARY_PATH="$libpath" ldd "$program" | grep 'not found'); then
  die "$program cannot load here:
$missing"
fi

mkdir -p "$OUT"
out="$(cd "$OUT" && pwd)"
rm -f "$out"/trace.* "$out/fidelity.trace" "$out"/nccl-debug.* "$out/run.log"
root=()
[ "$(id -u)" = 0 ] && root=(--allow-run-as-root)
# The programs check every result; the simulated NCCL then has to move data on every call.
export SIMNCCL_MOVE_DATA="${SIMNCCL_MOVE_DATA:-always}"
passthrough=()
for var in $(compgen -e | grep -E '^(SIMNCCL|NCCL)_' | grep -vE '^NCCL_(TUNER_PLUGIN|DEBUG|DEBUG_SUBSYS|DEBUG_FILE|NVLS_ENABLE)$' || true); do
  passthrough+=(-x "$var")
done
# NVLink multicast stays off: it can take shared GPUs out of service.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1

echo "gpu-fidelity: $np ranks, NCCL from $nccl_dir, results in $out"
set +e
timeout -k 10 "${FIDELITY_TIMEOUT_S:-150}" mpirun -np "$np" --oversubscribe "${root[@]}" --bind-to none \
  "${passthrough[@]}" -x NCCL_NVLS_ENABLE -x TORCH_SYMM_MEM_DISABLE_MULTICAST -x NVSHMEM_DISABLE_NVLS \
  -x NCCL_DEBUG="${NCCL_DEBUG:-INFO}" -x NCCL_DEBUG_SUBSYS="${NCCL_DEBUG_SUBSYS:-INIT,TUNING,ENV}" \
  -x NCCL_DEBUG_FILE="$out/nccl-debug.%h.%p" -x NCCL_TUNER_PLUGIN="$recorder" -x FIDELITY_TRACE="$out/trace" \
  -x LD_LIBRARY_PATH="$libpath" $(env | grep -oE '^CUDA_MPS_[A-Z_]+' | sed 's/^/-x /') \
  ${TESTBED_LAUNCHER:+"$TESTBED_LAUNCHER"} "$program" >"$out/run.log" 2>&1
rc=$?
set -e
if [ "$rc" != 0 ]; then
  tail -n 40 "$out/run.log" >&2
  [ "$rc" = 124 ] && die "the programs did not finish within ${FIDELITY_TIMEOUT_S:-150} s (hang?); see $out/run.log"
  die "the programs failed (exit $rc); see $out/run.log"
fi

{
  echo "# Tuner-plugin calls for tests/fidelity/programs.cc, recorded by scripts/gpu-fidelity.sh"
  echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ), host $(hostname), $np ranks, NCCL from $nccl_dir"
  if command -v nvidia-smi >/dev/null; then
    nvidia-smi -L 2>/dev/null | sed 's/ (UUID.*//; s/^/# /' || true
  fi
} >"$out/fidelity.trace"
for ((r = 0; r < np; r++)); do
  f="$out/trace.$r"
  [ -s "$f" ] || die "rank $r wrote no trace ($f)"
  grep -q ' init ' "$f" || die "rank $r's trace has no init call: NCCL did not load $recorder (see $out/nccl-debug.* or run.log)"
  cat "$f" >>"$out/fidelity.trace"
done
cat "$out/run.log"
echo "gpu-fidelity: $(grep -c ' init ' "$out/fidelity.trace") init, $(grep -c ' getCollInfo ' "$out/fidelity.trace") getCollInfo, $(grep -c ' finalize ' "$out/fidelity.trace") finalize call(s) over $np ranks in $out/fidelity.trace"
