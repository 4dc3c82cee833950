#!/bin/sh
# Runs one tessera command line and checks its exit code and the first line
# of its stderr (or stdout when WANT_STREAM=stdout).
#   check_cli.sh WANT_RC WANT_FIRST_LINE TESSERA ARGS...
set -u
want_rc=$1 want_line=$2
shift 2
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
timeout 20 "$@" >"$out" 2>"$err" </dev/null
rc=$?
stream=$err
[ "${WANT_STREAM:-stderr}" = stdout ] && stream=$out
got=$(head -n 1 "$stream")
fail=0
[ "$rc" = "$want_rc" ] || { echo "FAIL: exit code $rc, want $want_rc"; fail=1; }
[ "$got" = "$want_line" ] || { printf 'FAIL: first line\n  got:  %s\n  want: %s\n' "$got" "$want_line"; fail=1; }
[ $fail = 0 ] && echo "ok: rc=$rc: $got"
exit $fail
