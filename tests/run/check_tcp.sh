#!/bin/sh
# tessera run with XLA's multi-host runner flags: two processes meeting at a
# TCP rendezvous on loopback (--task_id, --num_nodes, --address), the second
# in the background; both must exit 0 and rank 0 must report a match.
#   check_tcp.sh TESSERA MODULE ARGS...
set -u
tessera=$1 module=$2
shift 2
out=$(mktemp) err=$(mktemp) out1=$(mktemp)
trap 'rm -f "$out" "$err" "$out1"' EXIT
port=$((20000 + $$ % 20000))
timeout 300 "$tessera" run --task_id 1 --num_nodes 2 --address 127.0.0.1:$port "$@" "$module" >"$out1" 2>&1 &
bg=$!
timeout 300 "$tessera" run --task_id 0 --num_nodes 2 --address 127.0.0.1:$port --check "$@" "$module" >"$out" 2>"$err"
rc=$?
wait $bg
rc1=$?
cat "$out"
[ $rc = 0 ] || { echo "FAIL: task 0 exit code $rc"; cat "$err"; exit 1; }
[ $rc1 = 0 ] || { echo "FAIL: task 1 exit code $rc1"; cat "$out1"; exit 1; }
grep -q '^check: match' "$out" || { echo "FAIL: no 'check: match'"; exit 1; }
echo ok
