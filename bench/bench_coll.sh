#!/bin/sh
# The collectives comparison of issue 6: Tessera vs Open MPI's own
# collectives on the same buffers, plus concurrent memcpy bandwidth, at
# np=2 and np=4 from 4 KiB to 256 MiB.
#   bench/bench_coll.sh BUILD_DIR [NP...]      (default NP: 2 4)
# Shared machines are noisy: compare the ratio column (measured side by
# side in one run), not absolute times, and repeat. Buffers come from
# ts_coll_alloc (the same-host mapped path); BENCH_FLAGS=--malloc measures
# plain buffers (CMA and staged copies) instead.
set -eu
build=${1:?usage: bench_coll.sh BUILD_DIR [NP...]}
shift
[ $# -gt 0 ] || set -- 2 4
root=
[ "$(id -u)" = 0 ] && root=--allow-run-as-root
for np in "$@"; do
  echo "## np=$np"
  mpirun $root --oversubscribe --bind-to none -np "$np" "$build/launcher/tessera" bench collectives \
    --peer=mpi --memcpy -b 4K -e 256M -f 4 -n 10 -w 2 -c 1 ${BENCH_FLAGS:-} \
    --collectives=all-reduce,all-gather,reduce-scatter,all-to-all
done
