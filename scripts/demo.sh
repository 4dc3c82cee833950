#!/usr/bin/env bash
# Installs the dependencies, builds Tessera in build/, and runs `tessera opt`
# on the bundled example: a 2-layer MLP forward pass, batch-sharded over 4
# partitions, parsed, verified (shapes re-derived) and printed back.
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
