#!/bin/sh
# One training step of an example module, run by tessera on the golden's
# inputs, equals the golden's expected outputs (a numpy-made golden folder:
# param<i>.npy in, out<k>.npy expected; numpy is not needed here).
#   check_step_golden.sh TESSERA NPY_ALLCLOSE DIR MODULE NOUT [RUN FLAGS...]
# RUN FLAGS choose the executor, e.g. `--devices 1 --reference` (the
# reference interpreter) or `--devices 4` (the partitioned program on the
# runtime, outputs assembled from every device's shard).
set -eu
tessera=$1 allclose=$2 dir=$3 module=$4 nout=$5
shift 5
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$tessera" run "$@" --inputs "$dir" --outputs "$tmp" "$module" >"$tmp/log"
cat "$tmp/log"
grep -q "^step 1 time_ms [0-9.]* loss " "$tmp/log" || { echo "FAIL: no step line"; exit 1; }
pairs= k=0
while [ "$k" -lt "$nout" ]; do
  [ -f "$tmp/out$k.npy" ] || { echo "FAIL: tessera wrote no out$k.npy"; exit 1; }
  pairs="$pairs $dir/out$k.npy $tmp/out$k.npy"
  k=$((k + 1))
done
[ ! -f "$tmp/out$nout.npy" ] || { echo "FAIL: more than $nout outputs"; exit 1; }
# shellcheck disable=SC2086
"$allclose" --rtol 1e-5 $pairs
