#!/usr/bin/env bash
# Builds a Release tree in build-release/ and benchmarks the HLO front end
# (parse, verify, print) on the large real corpus module, when ../shared is
# present, and on a generated module of N instructions (default 100000).
#   scripts/bench.sh [N]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

n=${1:-100000}
if ! [[ $n =~ ^[0-9]+$ ]]; then
  echo "usage: scripts/bench.sh [INSTRUCTIONS]   (default 100000)" >&2
  exit 2
fi

./scripts/install-deps.sh

gen=()
[ -f build-release/CMakeCache.txt ] || gen=(-G Ninja)
cmake -S . -B build-release "${gen[@]}" -DCMAKE_BUILD_TYPE=Release
cmake --build build-release --target bench_parse -j2

generated=build-release/gen_${n}.hlo
[ -s "$generated" ] || python3 bench/gen_module.py -n "$n" -o "$generated"

shopt -s nullglob
files=(../shared/corpus/real_hlo_large/*.hlo)
[ ${#files[@]} -gt 0 ] || echo "bench: ../shared/corpus/real_hlo_large not found; generated module only"
./build-release/bench/bench_parse "${files[@]}" "$generated"
