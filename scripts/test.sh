#!/usr/bin/env bash
# Installs the dependencies, builds Tessera in build/ with warnings as errors,
# and runs every CTest test (unit, corpus, mpi, faults, multihost, bench-smoke)
# but the label slow (the 5-repeat fault matrix: `ctest -L slow`).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

./scripts/install-deps.sh

# Ninja for a fresh build dir; an existing one keeps the generator it has.
gen=()
[ -f build/CMakeCache.txt ] || gen=(-G Ninja)
cmake -S . -B build "${gen[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTESSERA_WERROR=ON
cmake --build build -j2
ctest --test-dir build --output-on-failure -j2 -LE slow
