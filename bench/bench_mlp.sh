#!/bin/sh
# The MLP training step (examples/gen_mlp_train.py at its default sizes) at
# 1, 2 and 4 ranks under mpirun vs the hand-written C + OpenBLAS step
# (bench_mlp_ref), in the same run. Prints each median step time and its
# ratio to the hand-written one on one thread and on all the host's cores
# (the cores tessera's ranks share among them).
#   bench/bench_mlp.sh [BUILD_DIR] [STEPS]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../build}
steps=${2:-100}
tessera=$build/launcher/tessera
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 "$here/../examples/gen_mlp_train.py" --data 1 --model 1 -o "$tmp/mlp_1.hlo"
python3 "$here/../examples/gen_mlp_train.py" --data 2 --model 1 -o "$tmp/mlp_2.hlo"
python3 "$here/../examples/gen_mlp_train.py" --data 2 --model 2 -o "$tmp/mlp_4.hlo"
# The peer runs the OpenBLAS kernels tessera runs (tessera picks them from
# cpuid before OpenBLAS loads; OpenBLAS alone falls back to Prescott's here).
core=${OPENBLAS_CORETYPE:-$(TESSERA_LOG=info "$tessera" run --compile-only "$tmp/mlp_1.hlo" 2>&1 |
                            sed -n 's/.*OpenBLAS runs its \([A-Za-z0-9]*\) kernels.*/\1/p')}
ref=$(OPENBLAS_CORETYPE=$core OPENBLAS_NUM_THREADS=1 "$build/bench/bench_mlp_ref" --reps "$steps" |
      awk '/^step_ms/ { print $2 }')
# tessera gives each rank its share of the host's cores (BLAS and fusion
# loops): at 1 rank that is every core, so the peer gets them too.
cores=$(nproc)
refn=$(OPENBLAS_CORETYPE=$core OPENBLAS_NUM_THREADS=$cores "$build/bench/bench_mlp_ref" --reps "$steps" |
       awk '/^step_ms/ { print $2 }')
printf '%-28s %12s %10s %14s\n' run median_ms vs_C vs_C_all_cores
printf '%-28s %12s %10s\n' "C + OpenBLAS ($core, 1 thr)" "$ref" 1.00
printf '%-28s %12s %10s %14s\n' "C + OpenBLAS ($cores thr)" "$refn" \
  "$(awk -v a="$refn" -v b="$ref" 'BEGIN { printf "%.2f", a / b }')" 1.00
for n in 1 2 4; do
  line=$(sh "$here/../scripts/mpirun.sh" -np "$n" "$tessera" run --steps "$steps" --loop "$tmp/mlp_$n.hlo" |
         grep '^steps ')
  ms=$(echo "$line" | awk '{ for (i = 1; i < NF; i++) if ($i == "time_ms") { sub(";", "", $(i + 1)); print $(i + 1) } }')
  over=$(echo "$line" | sed -n 's/.*runtime overhead \([0-9.]*%\).*/\1/p')
  printf '%-28s %12s %10s %14s   (runtime overhead %s)\n' "tessera run, $n rank(s)" "$ms" \
    "$(awk -v a="$ms" -v b="$ref" 'BEGIN { printf "%.2f", a / b }')" \
    "$(awk -v a="$ms" -v b="$refn" 'BEGIN { printf "%.2f", a / b }')" "$over"
done
