#!/bin/sh
# The hang detector's cost on the example training step: the median step time
# of `tessera run` on 4 ranks under mpirun with the detector (progress records
# + heartbeats to a coordinator) and with --no-hang-detector, alternating
# ROUNDS times; prints each run's median and the ratio of the medians.
#   bench/bench_hang_overhead.sh [BUILD_DIR] [STEPS] [ROUNDS]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../build}
steps=${2:-200}
rounds=${3:-3}
tessera=$build/launcher/tessera
run() {
  sh "$here/../scripts/mpirun.sh" -np 4 "$tessera" run --steps "$steps" --loop "$@" "$here/../examples/mlp_train.hlo" |
    awk '/^steps / { for (i = 1; i < NF; i++) if ($i == "time_ms") { v = $(i + 1); sub(";", "", v); print v } }'
}
on= off=
i=0
while [ $i -lt "$rounds" ]; do
  a=$(run) b=$(run --no-hang-detector)
  echo "round $((i + 1)): with detector $a ms, without $b ms"
  on="$on $a" off="$off $b"
  i=$((i + 1))
done
med() { echo "$@" | tr ' ' '\n' | sed '/^$/d' | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
m_on=$(med $on) m_off=$(med $off)
echo "median step: with detector $m_on ms, without $m_off ms, ratio $(awk -v a="$m_on" -v b="$m_off" 'BEGIN { printf "%.3f", a / b }')"
