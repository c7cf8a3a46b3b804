#!/usr/bin/env bash
# libccltune.so needs nothing at run time beyond glibc (libstdc++, libgcc and Abseil are linked in, their
# symbols hidden), and exports only its API: the NCCL entry points it interposes, the tuner- and profiler-plugin
# structs and the ccltune* C API. Usage: runtime_deps_test.sh path/to/libccltune.so
set -euo pipefail
lib=$1
needed=$(readelf -d "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort | tr '\n' ' ')
echo "NEEDED: $needed"
for n in $needed; do
  case "$n" in
    libc.so.6 | libm.so.6 | ld-linux-x86-64.so.2 | libdl.so.2 | libpthread.so.0 | librt.so.1) ;;
    *) echo "libccltune.so needs $n at run time (only glibc is allowed)"; exit 1 ;;
  esac
done
if ldd "$lib" | grep -E 'absl|stdc\+\+|gcc_s|nccl|cuda'; then
  echo "ldd shows a library outside glibc"; exit 1
fi
bad=$(nm -D --defined-only "$lib" | awk '{print $3}' | grep -vE '^(p?nccl[A-Z][A-Za-z]*|ncclTunerPlugin_v[0-9]+|ncclProfiler_v[0-9]+|ccltune[A-Z][A-Za-z]*)$' || true)
if [[ -n "$bad" ]]; then
  echo "libccltune.so exports symbols outside its API:"; echo "$bad" | head -20; exit 1
fi
echo "runtime deps: glibc only; $(nm -D --defined-only "$lib" | wc -l) exported symbols, all API"
