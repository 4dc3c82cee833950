#!/usr/bin/env bash
# The main job on the bundled example: installs the dependencies, builds
# Tessera in build/, and trains the sharded MLP of examples/mlp_train.hlo
# (data-parallel x tensor-parallel over a 2x2 mesh) for 100 steps on 4 ranks
# under mpirun, printing the loss as it falls:
#   mpirun -np 4 tessera run examples/mlp_train.hlo --steps 100 --loop
# (through scripts/mpirun.sh, which adds what a small host and a root user
# need: --oversubscribe, --allow-run-as-root, --bind-to none).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

./scripts/install-deps.sh

gen=()
[ -f build/CMakeCache.txt ] || gen=(-G Ninja)
cmake -S . -B build "${gen[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build -j2

echo
echo '$ mpirun -np 4 ./build/launcher/tessera run examples/mlp_train.hlo --steps 100 --loop'
./scripts/mpirun.sh -np 4 ./build/launcher/tessera run examples/mlp_train.hlo --steps 100 --loop
