#!/bin/sh
# tessera run --check with compiled kernels:
#   check_codegen_run.sh TESSERA match|mismatch|nojit FILE [FLAGS...]
# match: exit 0 and "check: match"; mismatch: exit 1 and "MISMATCH";
# nojit: a match plus exactly one JIT warning.
set -u
tessera=$1 want=$2 file=$3
shift 3
out=$(mktemp) err=$(mktemp)
# a kernel cache of its own, empty: never the user's ~/.cache
export TESSERA_CACHE_DIR="$(mktemp -d)"
trap 'rm -f "$out" "$err"; rm -rf "$TESSERA_CACHE_DIR"' EXIT
devs=--devices
case " $* " in *" --devices "*) devs= ;; esac
timeout 280 "$tessera" run ${devs:+--devices 1} --check "$@" "$file" >"$out" 2>"$err"
rc=$?
cat "$out"; cat "$err"
case $want in
match|nojit)
  [ "$rc" = 0 ] || { echo "FAIL: exit $rc, want 0"; exit 1; }
  grep -q '^check: match' "$out" || { echo "FAIL: no 'check: match'"; exit 1; }
  if [ "$want" = nojit ]; then
    n=$(grep -c 'warning: the LLVM JIT did not start' "$err")
    [ "$n" = 1 ] || { echo "FAIL: $n JIT warnings, want 1"; exit 1; }
  fi
  ;;
mismatch)
  [ "$rc" = 1 ] || { echo "FAIL: exit $rc, want 1 (the wrong kernel went unnoticed)"; exit 1; }
  grep -q 'MISMATCH' "$out" || { echo "FAIL: no MISMATCH line"; exit 1; }
  ;;
esac
echo ok
