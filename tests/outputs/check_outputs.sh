#!/bin/sh
# Output targets that are not plain files, and output folders that cannot
# take the result. usage: check_outputs.sh CASE TESSERA SOURCE_DIR
# Exit 0 pass, 1 fail, 77 skip (what the case needs is not allowed here:
# mknod, mount).
case_=$1 T=$2 SRC=$3
MLP=$SRC/examples/mlp_train.hlo SMALL=$SRC/examples/mlp_sharded.hlo
W=$(mktemp -d "${TMPDIR:-/tmp}/ts_outputs.XXXXXX") || exit 1
MNT=
cleanup() {
  [ -n "$MNT" ] && umount "$MNT" 2>/dev/null
  rm -rf "$W"
}
trap cleanup EXIT
fail() {
  echo "FAIL ($case_): $*"
  for f in "$W"/stdout "$W"/stderr; do [ -s "$f" ] && { echo "--- $f"; head -20 "$f"; }; done
  exit 1
}
skip() {
  echo "SKIP ($case_): $*"
  exit 77
}
run() { "$T" "$@" >"$W/stdout" 2>"$W/stderr"; }

case $case_ in
chardev)
  # A node like /dev/null (char 1,3), private to the test: the old code
  # replaced the node by a regular file, and the real /dev/null is shared.
  mknod "$W/null" c 1 3 2>/dev/null || skip "mknod is not allowed here"
  run opt -o "$W/null" "$SMALL" || fail "tessera opt -o $W/null exited $?"
  [ -c "$W/null" ] || fail "$W/null is no longer a character device: $(ls -l "$W/null")"
  ;;
fifo)
  mkfifo "$W/p" || fail "mkfifo"
  "$T" opt "$SMALL" >"$W/want" 2>/dev/null || fail "tessera opt to stdout"
  cat "$W/p" >"$W/got" &
  reader=$!
  run opt -o "$W/p" "$SMALL"
  rc=$?
  if [ ! -p "$W/p" ]; then
    kill "$reader" 2>/dev/null # it waits on the FIFO that was renamed over
    fail "the FIFO was replaced: $(ls -l "$W/p")"
  fi
  wait "$reader"
  [ $rc -eq 0 ] || fail "tessera opt -o FIFO exited $rc"
  cmp -s "$W/want" "$W/got" || fail "the reader got $(wc -c <"$W/got") bytes, not the $(wc -c <"$W/want") of the module"
  ;;
symlink)
  echo old >"$W/real"
  ln -s real "$W/link"
  run opt -o "$W/link" "$SMALL" || fail "tessera opt -o LINK exited $?"
  "$T" opt "$SMALL" >"$W/want" 2>/dev/null || fail "tessera opt to stdout"
  [ -L "$W/link" ] || fail "the link was replaced: $(ls -l "$W/link")"
  cmp -s "$W/want" "$W/real" || fail "the link's target does not hold the module"
  ;;
readonly | readonly_trace)
  mkdir "$W/ro"
  if [ "$(id -u)" = 0 ]; then # root writes through permission bits: a read-only mount
    mount -t tmpfs -o ro,size=64k tmpfs "$W/ro" 2>/dev/null || skip "cannot mount a tmpfs here"
    MNT=$W/ro
  else
    chmod 555 "$W/ro"
  fi
  if [ "$case_" = readonly ]; then
    what="$W/ro/out"
    run run --devices 1 --random-inputs 0 --outputs "$what" "$MLP"
  else
    what="$W/ro/t.json"
    run run --devices 4 --random-inputs 0 --trace "$what" "$MLP"
  fi
  rc=$?
  [ $rc -eq 2 ] || fail "exit $rc, want 2"
  grep -q '^step ' "$W/stdout" && fail "it computed (step lines) before finding that $what cannot be written"
  grep -q "$what" "$W/stderr" || fail "the error does not name $what"
  [ "$(grep -c 'error' "$W/stderr")" = 1 ] || fail "want one error line"
  ;;
set)
  # The previous set is replaced whole: a stale out7.npy from a run with
  # more outputs goes, files that are not outputs stay.
  run run --devices 1 --random-inputs 1 --outputs "$W/out" "$MLP" || fail "first run exited $?"
  cp "$W/out/out0.npy" "$W/out/out7.npy"
  run run --devices 1 --random-inputs 2 --outputs "$W/out" "$MLP" || fail "second run exited $?"
  [ -e "$W/out/out7.npy" ] && fail "out7.npy of the previous set is still there"
  [ "$(ls "$W/out" | tr '\n' ' ')" = "out0.npy out1.npy out2.npy out3.npy out4.npy " ] || fail "the folder holds: $(ls -a "$W/out")"
  ls -a "$W" | grep -q '\.tmp\.' && fail "a staging folder was left: $(ls -a "$W")"
  echo notes >"$W/out/README"
  run run --devices 1 --random-inputs 3 --outputs "$W/out" "$MLP" || fail "third run exited $?"
  [ -f "$W/out/README" ] || fail "a file that is no output was removed"
  ls -a "$W/out" | grep -q '\.tmp\.' && fail "a staging folder was left: $(ls -a "$W/out")"
  ;;
enospc)
  mkdir "$W/m"
  mount -t tmpfs -o size=2m tmpfs "$W/m" 2>/dev/null || skip "cannot mount a tmpfs here"
  MNT=$W/m
  run run --devices 1 --random-inputs 1 --outputs "$W/m/out" "$MLP" || fail "first run exited $?"
  cp -r "$W/m/out" "$W/saved"
  # Two pages free: out0.npy (132 bytes) fits, out1.npy (512 KiB) does not.
  dd if=/dev/zero of="$W/m/keep" bs=4096 count=2 2>/dev/null
  dd if=/dev/zero of="$W/m/fill" bs=4096 2>/dev/null
  rm "$W/m/keep"
  run run --devices 1 --random-inputs 2 --outputs "$W/m/out" "$MLP"
  rc=$?
  [ $rc -ne 0 ] || fail "the run on a full disk exited 0"
  [ "$(grep -c 'error' "$W/stderr")" = 1 ] || fail "want one error line"
  grep -q 'No space left on device (ENOSPC)' "$W/stderr" || fail "the error does not name ENOSPC"
  grep -q "$W/m/out/out[0-9]*\.npy" "$W/stderr" || fail "the error does not name the file"
  for f in "$W"/saved/*; do
    cmp -s "$f" "$W/m/out/$(basename "$f")" || fail "$(basename "$f") is not the previous output: old and new mixed"
  done
  [ "$(ls "$W/m/out")" = "$(ls "$W/saved")" ] || fail "the folder holds: $(ls -a "$W/m/out")"
  ls -a "$W/m" "$W/m/out" | grep -q '\.tmp\.' && fail "a staging folder was left: $(ls -a "$W/m")"
  ;;
*)
  echo "unknown case $case_"
  exit 2
  ;;
esac
echo "PASS ($case_)"
exit 0
