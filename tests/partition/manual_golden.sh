#!/bin/sh
# The reference interpreter's run of a module on the golden's input equals
# the golden's expected output (tests/partition/manual_golden.py writes
# DIR/param0.npy and DIR/out0.npy; python is not needed here).
#   manual_golden.sh TESSERA NPY_ALLCLOSE DIR MODULE
set -eu
tessera=$1 allclose=$2 dir=$3 module=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$tessera" run --devices 1 --inputs "$dir" --outputs "$tmp" "$module"
[ -f "$tmp/out0.npy" ] || { echo "FAIL: tessera wrote no out0.npy"; exit 1; }
[ ! -f "$tmp/out1.npy" ] || { echo "FAIL: more than one output"; exit 1; }
"$allclose" --rtol 1e-6 "$dir/out0.npy" "$tmp/out0.npy"
