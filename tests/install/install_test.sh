#!/usr/bin/env bash
# The install as a user meets it: `cmake --install` into a temporary prefix, then what is there, used the
# way the docs say: pkg-config --cflags --libs ccltune compiles and links a C program that calls the API;
# a separate CMake project finds the package (find_package(ccltune) -> ccltune::ccltune) and builds
# bench/example_train.cc against it and NCCL; that binary then trains on the simulated cluster (2 ranks)
# with ccltune linked, not preloaded, and every workload converges.
# Usage: install_test.sh BUILD_DIR SOURCE_DIR NCCL_INCLUDE_DIR NCCL_LIBRARY MPIRUN [MPIRUN_FLAGS...]
set -euo pipefail
build=$1 src=$2 nccl_inc=$3 nccl_lib=$4 mpirun=$5
shift 5
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" >/dev/null
for f in lib/libccltune.so include/ccltune/ccltune.h bin/ccltune bin/ccltune-bench lib/cmake/ccltune/ccltuneConfig.cmake \
         lib/cmake/ccltune/ccltuneConfigVersion.cmake lib/cmake/ccltune/ccltuneTargets.cmake lib/pkgconfig/ccltune.pc; do
  [[ -e "$prefix/$f" ]] || { echo "install: $f missing in the prefix"; exit 1; }
done
"$prefix/bin/ccltune" --version

# pkg-config
flags=$(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags --libs ccltune)
echo "pkg-config --cflags --libs ccltune: $flags"
cat >"$work/version.c" <<'C'
#include <ccltune/ccltune.h>
#include <stdio.h>
int main(void) {
  int major, minor, patch;
  if (ccltuneGetVersion(&major, &minor, &patch) != 0) return 1;
  printf("%d.%d.%d %d\n", major, minor, patch, ccltuneIsActive());
  return 0;
}
C
# shellcheck disable=SC2086
cc "$work/version.c" -o "$work/version" $flags
got=$(LD_LIBRARY_PATH="$prefix/lib" "$work/version")
[[ "$got" == "$("$prefix/bin/ccltune" --version | cut -d' ' -f2) 0" ]] || { echo "pkg-config program printed '$got'"; exit 1; }

# find_package(ccltune) from a project of its own
cmake -S "$src/tests/install/consumer" -B "$work/consumer" -DCMAKE_PREFIX_PATH="$prefix" \
  -DNCCL_INCLUDE_DIR="$nccl_inc" -DNCCL_LIBRARY="$nccl_lib" -DEXAMPLE_SOURCE="$src/bench/example_train.cc" >/dev/null
cmake --build "$work/consumer" >/dev/null
readelf -d "$work/consumer/example_train" | grep -q 'NEEDED.*libccltune.so' ||
  { echo "example_train does not link libccltune.so"; exit 1; }

# It trains on the simulated cluster with ccltune linked in.
LD_LIBRARY_PATH="$prefix/lib:$build/simnccl" "$mpirun" -np 2 "$@" -x LD_LIBRARY_PATH \
  "$work/consumer/example_train" --steps 400 --export "$work/tuned.json" --expect-converged
"$prefix/bin/ccltune" validate "$work/tuned.json"
echo "install: prefix, pkg-config, find_package and the example program: all good"
