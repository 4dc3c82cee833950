#!/bin/sh
# One MLP training step run by the reference interpreter equals the numpy
# golden of tests/examples/make_goldens.py (inputs and outputs in DIR).
#   check_mlp_step.sh TESSERA NPY_ALLCLOSE DIR
set -eu
tessera=$1 allclose=$2 dir=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$tessera" run --devices 1 --inputs "$dir" --outputs "$tmp" "$dir/mlp_train_small.hlo" >"$tmp/log"
cat "$tmp/log"
grep -q "^step 1 time_ms [0-9.]* loss " "$tmp/log" || { echo "FAIL: no step line"; exit 1; }
pairs=
for k in 0 1 2 3 4; do pairs="$pairs $dir/out$k.npy $tmp/out$k.npy"; done
# shellcheck disable=SC2086
"$allclose" --rtol 1e-5 $pairs
