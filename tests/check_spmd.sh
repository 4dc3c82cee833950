#!/bin/sh
# Runs `tessera check` on one module and judges the outcome.
#   check_spmd.sh TESSERA XFAIL_LIST FILE WANT [CHECK FLAGS...]
# WANT:
#   ok               exit 0 and "result: match"
#   error:TEXT       exit 2 and TEXT in stderr
#   mismatch:TEXT    exit 1, "result: MISMATCH" and TEXT in stdout
#   not-run:TEXT     exit 3, "result: not run" and TEXT in stdout
# A FILE whose name is the first word of a line of XFAIL_LIST is an expected
# failure: it must miss WANT (the test then passes, printing why it failed);
# when it meets WANT the test fails, asking to remove it from the list.
# Exits 77 (skipped) when FILE does not exist (../shared absent).
set -u
tessera=$1 xfail=$2 file=$3 want=$4
shift 4
[ -f "$file" ] || { echo "skipped: $file not found"; exit 77; }
name=$(basename "$file")
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
timeout 290 "$tessera" check "$@" "$file" >"$out" 2>"$err" </dev/null
rc=$?
cat "$out"
cat "$err" >&2
why=
case $want in
ok)
  [ "$rc" = 0 ] || why="exit code $rc, want 0"
  [ -n "$why" ] || grep -q '^result: match' "$out" || why="no 'result: match' line"
  ;;
error:*)
  text=${want#error:}
  [ "$rc" = 2 ] || why="exit code $rc, want 2"
  [ -n "$why" ] || grep -qF -- "$text" "$err" || why="stderr lacks '$text'"
  ;;
mismatch:*)
  text=${want#mismatch:}
  [ "$rc" = 1 ] || why="exit code $rc, want 1"
  [ -n "$why" ] || grep -q '^result: MISMATCH' "$out" || why="no 'result: MISMATCH' line"
  [ -n "$why" ] || grep -qF -- "$text" "$out" || why="stdout lacks '$text'"
  ;;
not-run:*)
  text=${want#not-run:}
  [ "$rc" = 3 ] || why="exit code $rc, want 3"
  [ -n "$why" ] || grep -q '^result: not run' "$out" || why="no 'result: not run' line"
  [ -n "$why" ] || grep -qF -- "$text" "$out" || why="stdout lacks '$text'"
  ;;
*) echo "check_spmd.sh: unknown WANT '$want'"; exit 2 ;;
esac

listed=$(awk -v n="$name" '$1 == n { r = $0; sub(/^[^ \t]+[ \t]*/, "", r); print (r == "" ? "no reason given" : r); exit }' "$xfail" 2>/dev/null)
if [ -n "$listed" ]; then
  if [ -z "$why" ]; then
    echo "FAIL: $name now passes: remove it from $xfail"
    exit 1
  fi
  echo "expected failure ($listed): $why"
  exit 0
fi
if [ -n "$why" ]; then
  echo "FAIL: $why"
  exit 1
fi
echo "ok"
