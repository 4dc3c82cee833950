#!/bin/sh
# Runs one `tessera run` job and checks its outcome.
#   check_job.sh WANT NP TESSERA ARGS...
# NP 0 runs TESSERA directly, else under mpirun with NP ranks.
# WANT is a comma-separated list of:
#   ok        exit 0
#   falls     the loss of the last step line is below the first's
#   match     a "check: match" line
#   trace=S   the file after --trace contains S
#   out=TEXT  stdout contains TEXT
#   rc=N:TEXT exit code N and TEXT on stderr
set -u
want=$1 np=$2 tessera=$3
shift 3
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
if [ "$np" = 0 ]; then
  timeout 600 "$tessera" run "$@" >"$out" 2>"$err"
else
  timeout 600 sh "$here/../../scripts/mpirun.sh" -np "$np" "$tessera" run "$@" >"$out" 2>"$err"
fi
rc=$?
cat "$out"
fail() { echo "FAIL: $*"; echo "--- stderr:"; cat "$err"; exit 1; }
trace=
prev=
for a in "$@"; do
  [ "$prev" = --trace ] && trace=$a
  prev=$a
done
old_ifs=$IFS
IFS=,
for w in $want; do
  IFS=$old_ifs
  case $w in
  ok) [ "$rc" = 0 ] || fail "exit code $rc, want 0" ;;
  falls)
    first=$(awk '/^step [0-9]+ time_ms .* loss / { print $6; exit }' "$out")
    last=$(awk '/^step [0-9]+ time_ms .* loss / { l = $6 } END { print l }' "$out")
    [ -n "$first" ] && [ -n "$last" ] || fail "no loss in the step lines"
    awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < a) }' || fail "loss did not fall: $first -> $last"
    echo "loss $first -> $last"
    ;;
  match) grep -q '^check: match' "$out" || fail "no 'check: match' line" ;;
  trace=*)
    [ -n "$trace" ] && [ -s "$trace" ] || fail "no trace file"
    grep -qF -- "${w#trace=}" "$trace" || fail "trace $trace lacks '${w#trace=}'"
    ;;
  out=*) grep -qF -- "${w#out=}" "$out" || fail "stdout lacks '${w#out=}'" ;;
  rc=*)
    spec=${w#rc=}
    code=${spec%%:*} text=${spec#*:}
    [ "$rc" = "$code" ] || fail "exit code $rc, want $code"
    grep -qF -- "$text" "$err" || fail "stderr lacks '$text'"
    ;;
  *) echo "check_job.sh: unknown expectation '$w'"; exit 2 ;;
  esac
  IFS=,
done
IFS=$old_ifs
echo "ok"
