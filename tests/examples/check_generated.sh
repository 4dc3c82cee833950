#!/bin/sh
# A committed generated file is what its generator writes today.
#   check_generated.sh PYTHON GENERATOR COMMITTED_FILE [GENERATOR ARGS...]
set -eu
python=$1 gen=$2 committed=$3
shift 3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$python" "$gen" "$@" -o "$tmp/out.hlo"
if ! cmp -s "$tmp/out.hlo" "$committed"; then
  echo "FAIL: $committed is stale; regenerate it with:"
  echo "  $gen $* -o $committed"
  diff "$committed" "$tmp/out.hlo" | head -20
  exit 1
fi
echo "ok: $committed is up to date"
