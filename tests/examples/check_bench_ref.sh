#!/bin/sh
# The hand-written baseline (bench/bench_mlp_ref) computes the same step as
# the example: its step 1 on the golden's inputs equals the numpy golden.
#   check_bench_ref.sh BENCH_MLP_REF NPY_ALLCLOSE DIR LR
set -eu
bench=$1 allclose=$2 dir=$3 lr=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$bench" --inputs "$dir" --outputs "$tmp" --lr "$lr" --losses 1 --reps 1
pairs=
for k in 0 1 2 3 4; do pairs="$pairs $dir/out$k.npy $tmp/out$k.npy"; done
# shellcheck disable=SC2086
"$allclose" --rtol 1e-5 $pairs
