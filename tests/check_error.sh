#!/bin/sh
# Runs `tessera opt` on one bad input and compares its exit code and whole
# stderr (located message, source line, caret) with the committed golden.
#   check_error.sh TESSERA DIR NAME
# DIR/NAME.hlo is the input, DIR/NAME.expected the exact stderr, optional
# DIR/NAME.args extra flags for `tessera opt`, optional DIR/NAME.rc the exit
# code (default 2).
set -u
tessera=$1 dir=$2 name=$3
cd "$dir" || exit 1
args=""
[ -f "$name.args" ] && args=$(cat "$name.args")
want_rc=2
[ -f "$name.rc" ] && want_rc=$(cat "$name.rc")
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
# shellcheck disable=SC2086
timeout 20 "$tessera" opt $args "$name.hlo" >"$out" 2>"$err"
rc=$?
fail=0
if [ "$rc" != "$want_rc" ]; then
  echo "FAIL: exit code $rc, want $want_rc"
  fail=1
fi
if [ -s "$out" ]; then
  echo "FAIL: wrote to stdout on error:"; head -5 "$out"
  fail=1
fi
if ! cmp -s "$err" "$name.expected"; then
  echo "FAIL: stderr differs from $name.expected:"
  diff "$name.expected" "$err" | head -20
  fail=1
fi
[ $fail = 0 ] && echo "ok: $(head -1 "$err")"
exit $fail
