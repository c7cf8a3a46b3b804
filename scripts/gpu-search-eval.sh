#!/usr/bin/env bash
# The search's evaluation on the one-GPU testbed (real NCCL, scripts/gpu-testbed.sh): ccltune-bench over
# all-reduce, all-gather and reduce-scatter, 64 KiB-16 MiB, fp32. Runs (RUNS picks and orders them;
# default: oracle repeat, then old when OLD_PKG is set):
#   oracle   --mode compare,oracle with ccltune's defaults
#   cost     the same with --search-cost 1: each row's tuning loop timed on the host, and the same loop on NCCL's
#            default for as many calls (bench/search_cost.py)
#   repeat   --mode compare again (how much a second run of the search differs)
#   min      --mode compare with CCLTUNE_TIMING=min (the per-call minimum over ranks)
#   nochunk  --mode compare,oracle with CCLTUNE_SEARCH_CHUNK=0 (under tuner v6: channels only, NCCL's chunk size)
#   old      --mode compare with the package in OLD_PKG (an earlier ccltune: before and after in one session)
#   oldoracle  --mode compare,oracle with the package in OLD_PKG (an A/B judged by the oracle in both arms)
#   oldcost  the cost run with the package in OLD_PKG (an A/B of two builds' full runs: RUNS="cost oldcost oldcost cost")
#   loop     --mode loop: the sweep's rows as the workloads of a training loop, each once per iteration, until every
#            one settled (300 iterations at most), then 100 timed iterations each of NCCL's default and the tuned
#            communicator; the leader's tuning trace beside its JSON (NAME.trace.csv, CCLTUNE_TRACE)
#   loop4    the same with each workload 4 times per iteration (150 iterations at most, 60 timed)
#   oldloop, oldloop4  the loop runs with the package in OLD_PKG (RUNS="loop oldloop oldloop loop": an A/B of the
#            iterations by which every workload settled; bench/loop_report.py --group pools them)
# OLD_LIB names an earlier libccltune.so alone, for when two whole packages do not fit in what a device run carries:
# its arm runs this package's programs with that library (OLD_PKG is then made in a temporary directory).
# An entry may repeat (RUNS="oracle oldoracle oracle oldoracle": alternating A/B runs); its second run is NAME-2, and
# so on. COLLS (default allreduce,allgather,reducescatter) and SIZES (default "-b 64K -e 16M -f 4") narrow the sweep,
# e.g. to the rows an A/B is about (COLLS=allreduce SIZES="-b 64K -e 256K -f 4"). BENCH_ARGS are added to every run's
# bench arguments (e.g. BENCH_ARGS="--oracle-both 1").
# Results (text and JSON per run) go to OUT (default out/search-eval). Needs the package in .gpu.
# bench/search_report.py turns the JSON files into the report's tables.
# usage: [NP=4] [ITERS=200] [OUT=dir] [OLD_PKG=dir | OLD_LIB=file] [RUNS="..."] [COLLS=...] [SIZES="..."] [BENCH_ARGS="..."]
#        scripts/gpu-search-eval.sh
set -euo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-out/search-eval}"
np="${NP:-4}"
iters="${ITERS:-200}"
mkdir -p "$out"
read -r -a sizes <<<"${SIZES:--b 64K -e 16M -f 4}"
read -r -a extra <<<"${BENCH_ARGS:-}"
sweep=(-c "${COLLS:-allreduce,allgather,reducescatter}" "${sizes[@]}" -d float32 -n "$iters" "${extra[@]}")
if [ -n "${OLD_LIB:-}" ]; then
  # This package's programs and libraries, linked, with the earlier ccltune library in place of this one's.
  here="$(cd "${PKG:-.gpu}" && pwd)"
  OLD_PKG="$(mktemp -d /tmp/ccltune-old-pkg.XXXXXX)"
  trap 'rm -rf "$OLD_PKG"' EXIT
  mkdir -p "$OLD_PKG/bin" "$OLD_PKG/lib"
  ln -s "$here"/bin/* "$OLD_PKG/bin/"
  ln -s "$here"/lib/* "$OLD_PKG/lib/"
  rm "$OLD_PKG/lib/libccltune.so"
  cp "$OLD_LIB" "$OLD_PKG/lib/libccltune.so"
fi
declare -A seen=()
run() {  # NAME [env ...] -- bench args
  local name="$1"
  shift
  seen[$name]=$((${seen[$name]:-0} + 1))
  if [ "${seen[$name]}" -gt 1 ]; then name="$name-${seen[$name]}"; fi
  local envs=()
  while [ "$1" != -- ]; do envs+=("$1"); shift; done
  # trace=1 (for this call): the leader's tuning trace beside the run's JSON.
  [ "${trace:-0}" = 1 ] && envs+=(CCLTUNE_TRACE="$(cd "$out" && pwd)/$name.trace.csv")
  shift
  echo "== $name: $(date -u +%FT%TZ)"
  env "${envs[@]}" bash scripts/gpu-testbed.sh -n "$np" run scripts/gpu-carried-run.sh \
    "${sweep[@]}" --json "$out/$name.json" "$@" >"$out/$name.txt" 2>&1 || echo "== $name failed: $?"
  grep -vE '^\s*$' "$out/$name.txt" | grep -vE 'ccltune summary|^  [a-z]' | tail -25
}
for r in ${RUNS:-oracle repeat ${OLD_PKG:+old}}; do
  case "$r" in
    oracle) run oracle -- --mode compare,oracle ;;
    cost) run cost -- --mode compare,oracle --search-cost 1 ;;
    repeat) run repeat -- --mode compare ;;
    min) run min CCLTUNE_TIMING=min -- --mode compare ;;
    nochunk) run nochunk CCLTUNE_SEARCH_CHUNK=0 -- --mode compare,oracle ;;
    old) run old PKG="${OLD_PKG:?OLD_PKG names the earlier package}" -- --mode compare ;;
    oldoracle) run old-oracle PKG="${OLD_PKG:?OLD_PKG names the earlier package}" -- --mode compare,oracle ;;
    oldcost) run old-cost PKG="${OLD_PKG:?OLD_PKG names the earlier package}" -- --mode compare,oracle --search-cost 1 ;;
    loop | loop4 | oldloop | oldloop4)
      pkg_env=()
      [[ "$r" == old* ]] && pkg_env=(PKG="${OLD_PKG:?OLD_PKG names the earlier package}")
      loop_args=(--mode loop -n 100 --loop-iters 300)
      [[ "$r" == *4 ]] && loop_args=(--mode loop --loop-repeat 4 -n 60 --loop-iters 150)
      trace=1 run "${r/old/old-}" "${pkg_env[@]}" -- "${loop_args[@]}"
      ;;
    *) echo "gpu-search-eval: unknown run $r" >&2; exit 2 ;;
  esac
done
echo "== done $(date -u +%FT%TZ)"
