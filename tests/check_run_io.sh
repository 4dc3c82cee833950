#!/bin/sh
# .npy inputs and outputs of `tessera run`: outputs written by one run load
# back as the next run's inputs (bf16 written as f32 reads back exactly), and
# running from those files gives byte-identical outputs to running from the
# same seed directly.
#   check_run_io.sh TESSERA DIR
set -eu
tessera=$1 dir=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$tessera" run --devices 1 --random-inputs 7 --outputs "$tmp/seeded" "$dir/ident.hlo" >/dev/null
mkdir "$tmp/in"
for k in 0 1 2; do cp "$tmp/seeded/out$k.npy" "$tmp/in/param$k.npy"; done
"$tessera" run --devices 1 --inputs "$tmp/in" --outputs "$tmp/from_files" "$dir/combine.hlo" >/dev/null
"$tessera" run --devices 1 --random-inputs 7 --outputs "$tmp/from_seed" "$dir/combine.hlo" >/dev/null
for k in 0 1 2; do
  cmp "$tmp/from_files/out$k.npy" "$tmp/from_seed/out$k.npy"
done
# A missing parameter file is one clear error naming it, exit 2.
rm "$tmp/in/param2.npy"
if "$tessera" run --devices 1 --inputs "$tmp/in" "$dir/combine.hlo" >/dev/null 2>"$tmp/err"; then
  echo "FAIL: ran without param2.npy"; exit 1
else
  rc=$?
fi
[ "$rc" = 2 ] || { echo "FAIL: exit $rc, want 2"; exit 1; }
grep -q "param2.npy" "$tmp/err" || { echo "FAIL: error does not name param2.npy:"; cat "$tmp/err"; exit 1; }
# A file of the wrong shape names the parameter.
cp "$tmp/seeded/out0.npy" "$tmp/in/param2.npy"
if "$tessera" run --devices 1 --inputs "$tmp/in" "$dir/combine.hlo" >/dev/null 2>"$tmp/err"; then
  echo "FAIL: ran with a wrong param2.npy"; exit 1
fi
grep -q "param2.npy" "$tmp/err" || { echo "FAIL:"; cat "$tmp/err"; exit 1; }
echo ok
