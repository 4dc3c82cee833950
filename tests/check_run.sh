#!/bin/sh
# Runs `tessera run` on a module and checks the outcome.
#   check_run.sh TESSERA FILE finite [FLAGS...]   exit 0, every output finite
#   check_run.sh TESSERA FILE ok [FLAGS...]       exit 0
#   check_run.sh TESSERA FILE error:TEXT [FLAGS...]  exit 2 and TEXT in stderr
#   check_run.sh TESSERA FILE cannot:TEXT [FLAGS...] exit 3 (cannot run here) and TEXT in stderr
set -u
tessera=$1 file=$2 want=$3
shift 3
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
timeout 600 "$tessera" run "$@" "$file" >"$out" 2>"$err"
rc=$?
cat "$out"
case $want in
error:* | cannot:*)
  text=${want#*:} code=2
  case $want in cannot:*) code=3 ;; esac
  if [ "$rc" != "$code" ]; then echo "FAIL: exit code $rc, want $code"; cat "$err"; exit 1; fi
  if ! grep -qF -- "$text" "$err"; then echo "FAIL: stderr lacks '$text':"; cat "$err"; exit 1; fi
  ;;
*)
  if [ "$rc" != 0 ]; then echo "FAIL: exit code $rc"; cat "$err"; exit 1; fi
  if ! grep -q '^step 1 time_ms' "$out"; then echo "FAIL: no step line"; exit 1; fi
  if [ "$want" = finite ]; then
    # "outK TYPE[dims] finite A/B ...": A must equal B.
    bad=$(awk '/^out[0-9]+ / { split($4, f, "/"); if (f[1] != f[2]) print }' "$out")
    if [ -n "$bad" ]; then echo "FAIL: non-finite outputs:"; echo "$bad"; exit 1; fi
  fi
  ;;
esac
echo "ok"
