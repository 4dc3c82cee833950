#!/bin/sh
# A coordinator ended by a signal says so on stderr (its stderr is rank 0's,
# the one place an operator looks), and still dies of that signal.
#   check_coord_signal.sh TESSERA
set -u
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkfifo "$tmp/addr"
"$1" hang-coordinator --listen 127.0.0.1:0 --world 2 --secret abcdefabcdefabcdef > "$tmp/addr" 2> "$tmp/err" &
pid=$!
read -r addr < "$tmp/addr" || { echo "FAIL: no address line"; exit 1; }
kill -TERM "$pid"
wait "$pid"
rc=$?
[ "$rc" = 143 ] || { echo "FAIL: exit $rc, want 143 (SIGTERM)"; cat "$tmp/err"; exit 1; }
grep -q "^hang-coordinator: killed by signal 15; no digest$" "$tmp/err" || { echo "FAIL: stderr:"; cat "$tmp/err"; exit 1; }
echo "ok: coordinator at $addr said it was killed by signal 15"
