#!/usr/bin/env bash
# Installs the dependencies, builds Tessera in build/, and runs `tessera opt`
# and `tessera run` on the bundled example: a 2-layer MLP forward pass,
# batch-sharded over 4 partitions, parsed, verified (shapes re-derived) and
# printed back, then run by the reference interpreter on seeded inputs.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

./scripts/install-deps.sh

gen=()
[ -f build/CMakeCache.txt ] || gen=(-G Ninja)
cmake -S . -B build "${gen[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build -j2

echo
echo '$ ./build/launcher/tessera opt --stage=verified examples/mlp_sharded.hlo'
./build/launcher/tessera opt --stage=verified examples/mlp_sharded.hlo

echo
echo '$ ./build/launcher/tessera run --devices 1 --random-inputs 0 examples/mlp_sharded.hlo'
./build/launcher/tessera run --devices 1 --random-inputs 0 examples/mlp_sharded.hlo
