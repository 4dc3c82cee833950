#!/bin/bash
# A collective performance table measured across 2 hosts x 2 ranks of
# tests/cluster (link DELAY_US one way, RATE_MBIT), the S-curve fitted from
# it (tessera opt --fit-scurve), and the MLP example's step as predicted by
# the scheduler with that fit (--compile-only) vs measured on the same link.
#   bench/bench_multihost_perftable.sh BUILD_DIR [OUT_PREFIX]
#     (default bench/results/multihost_perf_table: .txtpb, _fit.txt)
# Environment: DELAY_US (2000), RATE_MBIT (1000), MAX (16M), STEPS (10).
set -euo pipefail
build=$(cd "${1:?usage: bench_multihost_perftable.sh BUILD_DIR [OUT_PREFIX]}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
out=${2:-$here/results/multihost_perf_table}
delay=${DELAY_US:-2000} rate=${RATE_MBIT:-1000} max=${MAX:-16M} steps=${STEPS:-10}
C=$here/../tests/cluster/cluster.sh
tessera=$build/launcher/tessera
name=tsbp$$
export TS_CLUSTER_RELAY=$build/tests/ts_cluster_relay
trap '"$C" down $name' EXIT
"$C" up $name 2 "$delay" "$rate" 0
mkdir -p "$(dirname "$out")"
{
  echo "# bench_multihost_perftable.sh $(date -u +%Y-%m-%dT%H:%MZ): link ${delay} us one way, ${rate} Mbit/s;" \
    "2 hosts x 2 ranks; load $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "${out}_fit.txt"
timeout -k 5 900 "$C" mpirun $name 2 -np 4 "$tessera" perf-table collectives -b 4K -e "$max" -f 4 -n 5 -w 1 \
  --collectives=all-reduce,all-gather,reduce-scatter --group-sizes=2,4 --progress=none --no-merge -o "$out.txtpb"
fit=$("$tessera" opt --fit-scurve "$out.txtpb" --gpus-per-node 2 | tail -1)
echo "fitted S-curve: $fit" | tee -a "${out}_fit.txt"
mlp=$here/../examples/mlp_train.hlo
pred=$(timeout -k 5 300 "$C" mpirun $name 2 -np 4 "$tessera" run --compile-only --cost-model "analytical:$fit" "$mlp" |
  awk '/^schedule/ { for (i = 1; i <= NF; i++) if ($i == "step") print $(i + 1) }' | head -1)
meas=$(timeout -k 5 300 "$C" mpirun $name 2 -np 4 "$tessera" run --cost-model "analytical:$fit" --steps "$steps" --loop "$mlp" |
  awk '/^steps / { for (i = 1; i <= NF; i++) if ($i == "time_ms") { v = $(i + 1); gsub(/[;,]/, "", v); print v } }')
awk -v p="$pred" -v m="$meas" 'BEGIN { printf "MLP step (4 devices, 2 slices): predicted %s ms, measured median %s ms, error %+.1f%%\n", p, m, 100 * (p - m) / m }' |
  tee -a "${out}_fit.txt"
