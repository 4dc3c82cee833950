#!/usr/bin/env bash
# Builds a Release tree in build-release/ and benchmarks the HLO front end
# (parse, verify, print) on the large real corpus module, when ../shared is
# present, and on a generated module of N instructions (default 100000); then
# sharding propagation on generated modules of 1k to 100k instructions with
# only the parameters annotated (bench_propagate: ns/instruction and its
# largest/smallest ratio, ~1 when linear).
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
cmake --build build-release --target bench_parse bench_propagate -j2

generated=build-release/gen_${n}.hlo
[ -s "$generated" ] || python3 bench/gen_module.py -n "$n" -o "$generated"

shopt -s nullglob
files=(../shared/corpus/real_hlo_large/*.hlo)
[ ${#files[@]} -gt 0 ] || echo "bench: ../shared/corpus/real_hlo_large not found; generated module only"
./build-release/bench/bench_parse "${files[@]}" "$generated"

prop_files=()
for size in 1000 2000 5000 10000 20000 50000 100000; do
  f=build-release/gen_prop_${size}.hlo
  [ -s "$f" ] || python3 bench/gen_module.py -n "$size" --shard params --partitions 8 -o "$f"
  prop_files+=("$f")
done
./build-release/bench/bench_propagate "${prop_files[@]}"
