#!/bin/sh
# The partitioned program of a corpus windowed-einsum case has XLA's shape:
# a while loop, COUNT collective-permutes and an entry root matching ROOT
# (an extended regex over its `= SHAPE opcode(` text).
#   windowed_structure.sh TESSERA FILE ROOT COUNT [OPT FLAGS...]
# Exits 77 (skipped) when FILE does not exist (../shared absent).
set -u
tessera=$1 file=$2 root=$3 count=$4
shift 4
[ -f "$file" ] || { echo "skipped: $file not found"; exit 77; }
out=$("$tessera" opt --stage=partitioned "$@" "$file") || exit 1
entry=$(printf '%s\n' "$out" | sed -n '/^ENTRY/,$p')
got_root=$(printf '%s\n' "$entry" | grep '^  ROOT ' | sed 's/^  ROOT %[^ ]* //')
got_count=$(printf '%s\n' "$out" | grep -c ' collective-permute(')
printf '%s\n' "$out" | grep -q ' while(' || { echo "FAIL: no while loop"; exit 1; }
printf '%s\n' "$got_root" | grep -Eq -- "$root" || { echo "FAIL: entry root '$got_root', want /$root/"; exit 1; }
[ "$got_count" = "$count" ] || { echo "FAIL: $got_count collective-permutes, want $count"; exit 1; }
echo "ok: root '$got_root', $got_count collective-permutes"
