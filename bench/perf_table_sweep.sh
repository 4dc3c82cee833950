#!/bin/sh
# The full collective performance table of issue 9 on this host: 8 ranks
# under mpirun, groups of 2, 4 and 8 (contiguous and strided where there is
# more than one group), every collective and permute pattern, 1K to MAX,
# ROUNDS sweeps with each point's median kept; then the leave-one-out check.
#   bench/perf_table_sweep.sh BUILD_DIR [OUT_PREFIX]
#     (default OUT_PREFIX bench/results/perf_table_host: writes .pb, .svg, _check.txt)
# Environment: NP (default 8), MAX (default 64M), ROUNDS (default 3),
# BACKEND (mpi; "threads" runs NP in-process ranks instead of mpirun).
# MAX stays moderate on small hosts: with 8 ranks on 2 cores a 64M all-reduce
# takes ~50 ms a run, so the sweep takes minutes; 2G (XLA's default) would
# take hours and need 8 x 2 x 2G of memory.
set -eu
build=${1:?usage: perf_table_sweep.sh BUILD_DIR [OUT_PREFIX]}
out=${2:-bench/results/perf_table_host}
np=${NP:-8} max=${MAX:-64M} rounds=${ROUNDS:-3} backend=${BACKEND:-mpi}
tessera=$build/launcher/tessera
mkdir -p "$(dirname "$out")"
flags="-b 1K -e $max --rounds $rounds --progress=lines --no-merge -o $out.pb"
if [ "$backend" = threads ]; then
  # shellcheck disable=SC2086
  "$tessera" perf-table collectives --devices "$np" $flags
else
  root=
  [ "$(id -u)" = 0 ] && root=--allow-run-as-root
  # shellcheck disable=SC2086
  mpirun $root --oversubscribe --bind-to none -np "$np" "$tessera" perf-table collectives $flags
fi
"$tessera" perf-table check "$out.pb" | tee "${out}_check.txt"
