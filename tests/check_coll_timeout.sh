#!/bin/sh
# The deadline of tessera run's collectives: --timeout when given, else
# TESSERA_COLL_TIMEOUT, else 300 s. Device 1 is 4 s late at step 1
# (TESSERA_FAULT=slow), so with a 1 s deadline device 0's first collective
# times out and the run fails (exit 4); with 300 s it would wait and pass.
# Under load the deadline can strike first where device 0 makes the
# sub-communicator of a group set (also a collective, with the same deadline).
#   check_coll_timeout.sh TESSERA MODULE
set -u
bin=$1 module=$2
err=$(mktemp)
trap 'rm -f "$err"' EXIT
fail=0
run_case() { # NAME ENV_TIMEOUT FLAGS...
  name=$1 env_timeout=$2
  shift 2
  start=$(date +%s)
  TESSERA_COLL_TIMEOUT=$env_timeout TESSERA_FAULT=slow:rank=1:step=1:seconds=4 \
    timeout 60 "$bin" run --devices 2 --no-hang-detector "$@" "$module" >/dev/null 2>"$err" </dev/null
  rc=$?
  secs=$(($(date +%s) - start))
  if [ "$rc" != 4 ] || ! grep -Eq 'collective failed: timeout|sub-communicator of group set [0-9]+: timeout' "$err"; then
    echo "FAIL: $name: exit $rc after ${secs} s (want 4: a collective timed out); stderr:"
    cat "$err"
    fail=1
  else
    echo "ok: $name: exit $rc after ${secs} s: $(grep -E 'collective failed|sub-communicator' "$err")"
  fi
}
run_case "TESSERA_COLL_TIMEOUT=1, no --timeout" 1
run_case "--timeout 1 wins over TESSERA_COLL_TIMEOUT=1000" 1000 --timeout 1
exit $fail
