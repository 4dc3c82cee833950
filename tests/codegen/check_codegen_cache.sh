#!/bin/sh
# The on-disk kernel cache through tessera run (codegen/cache.c):
#   check_codegen_cache.sh TESSERA CASE FILE
# Every run gets its own cache folder under a fresh temporary folder (and
# HOME there too), never the user's ~/.cache. Cases:
#   hit       a cold run stores one entry, a warm run loads it (no rewrite),
#             both match the interpreter with byte-identical outputs
#   truncate  an entry cut short: one warning, a match, the entry rewritten
#   flip      an entry with a flipped payload byte: the same
#   knob      TESSERA_CODEGEN_PERTURB is part of the key: a wrong kernel is
#             not served from a clean run's entry, nor the other way round
#   unwritable  a cache folder that cannot be made (a file in the way) or
#             written (read-only, when not root): one warning, a match
#   off       --no-kernel-cache and TESSERA_CACHE_DIR=""/off write nothing;
#             the defaults ($XDG_CACHE_HOME/tessera, ~/.cache/tessera) do
#   concurrent  four runs at once into one empty cache (as mpirun's ranks
#             do): all match, no warning, one whole entry, no temporary left
#   diskfull  a cache on a full file system (a one-page tmpfs, root only,
#             else skipped): each run warns once naming ENOSPC, matches,
#             and leaves no entry nor temporary behind
set -u
tessera=$(realpath "$1") case=$2 file=$(realpath "$3") # the runs start in a folder of their own
tmp=$(mktemp -d)
pids=
trap 'for p in $pids; do kill "$p" 2>/dev/null; done; umount "$tmp/fs" 2>/dev/null; chattr -i "$tmp/ro" 2>/dev/null; chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
export HOME="$tmp/home"
unset XDG_CACHE_HOME TESSERA_CODEGEN_PERTURB
export TESSERA_LOG=info
mkdir -p "$HOME"
n=0

fail() { echo "FAIL ($case): $*"; exit 1; }

# run WANT [FLAGS...]: tessera run --check (match: exit 0; mismatch: exit 1)
# into $tmp/out<n> and $tmp/err<n>, in $tmp/cwd
run() {
  want=$1
  shift
  n=$((n + 1))
  mkdir -p "$tmp/cwd"
  (cd "$tmp/cwd" && timeout 280 "$tessera" run --devices 1 --check "$@" "$file") >"$tmp/out$n" 2>"$tmp/err$n"
  rc=$?
  sed "s/^/[run $n] /" "$tmp/out$n" "$tmp/err$n"
  case $want in
  match) [ "$rc" = 0 ] && grep -q '^check: match' "$tmp/out$n" || fail "run $n: exit $rc, want a match" ;;
  mismatch) [ "$rc" = 1 ] && grep -q MISMATCH "$tmp/out$n" || fail "run $n: exit $rc, want a mismatch" ;;
  esac
}
warnings() { grep -c 'warning: kernel cache' "$tmp/err$n"; }
hit() { grep -q 'kernel cache: hit' "$tmp/err$n"; }
stored() { grep -q 'kernel cache: stored' "$tmp/err$n"; }
entries() { find "$1" -name '*.o' -type f 2>/dev/null | wc -l; }

# corrupt HOW: a cold run, HOW done to its entry, then a run that must
# notice (one warning), recompile (a match) and rewrite the entry, and a
# third that loads the rewritten entry cleanly
corrupt() {
  export TESSERA_CACHE_DIR="$tmp/c"
  run match
  e=$(find "$tmp/c" -name '*.o' -type f)
  [ -n "$e" ] || fail "no entry after a cold run"
  size=$(wc -c <"$e")
  cp "$e" "$tmp/good"
  case $1 in
  truncate) head -c $((size / 2)) "$e" >"$e.cut" && mv "$e.cut" "$e" ;;
  flip) # one byte in the middle of the object, past the 88-byte header
    at=$((88 + (size - 88) / 2))
    b=$(od -An -tu1 -j "$at" -N1 "$e" | tr -d ' ')
    printf "$(printf '\\%03o' $(((b + 1) % 256)))" | dd of="$e" bs=1 seek="$at" conv=notrunc 2>/dev/null ;;
  esac
  cmp -s "$e" "$tmp/good" && fail "the entry did not change"
  run match
  [ "$(warnings)" = 1 ] || fail "$(warnings) cache warnings for a corrupt entry, want 1"
  grep -q 'unusable' "$tmp/err$n" || fail "the warning does not say the entry is unusable"
  hit && fail "a corrupt entry was loaded"
  stored || fail "the corrupt entry was not rewritten"
  [ "$(wc -c <"$e")" = "$size" ] || fail "the rewritten entry has $(wc -c <"$e") bytes, want $size"
  run match
  [ "$(warnings)" = 0 ] || fail "a warning after the entry was rewritten"
  hit || fail "the rewritten entry was not loaded"
}

case $case in
hit)
  export TESSERA_CACHE_DIR="$tmp/c"
  run match --outputs "$tmp/cold"
  hit && fail "a hit in an empty cache"
  stored || fail "the cold run stored nothing"
  [ "$(entries "$tmp/c")" = 1 ] || fail "$(entries "$tmp/c") entries, want 1"
  e=$(find "$tmp/c" -name '*.o' -type f)
  before=$(ls -li --time-style=full-iso "$e")
  run match --outputs "$tmp/warm"
  hit || fail "the warm run did not load the entry"
  stored && fail "the warm run rewrote the entry"
  [ "$(ls -li --time-style=full-iso "$e")" = "$before" ] || fail "the entry changed on a hit"
  [ "$(warnings)" = 0 ] || fail "cache warnings on a clean hit"
  for f in "$tmp"/cold/*.npy; do
    cmp "$f" "$tmp/warm/$(basename "$f")" || fail "cold and warm outputs differ: $(basename "$f")"
  done
  ls "$tmp"/cold/*.npy >/dev/null 2>&1 || fail "no outputs written"
  # --compile-only reports the hit
  n=$((n + 1))
  timeout 280 "$tessera" run --compile-only --devices 1 "$file" >"$tmp/out$n" 2>&1
  grep 'compiled kernels' "$tmp/out$n"
  grep -q 'kernel cache hit' "$tmp/out$n" || fail "--compile-only does not report the hit"
  ;;
truncate|flip) corrupt "$case" ;;
knob)
  export TESSERA_CACHE_DIR="$tmp/c"
  run match
  export TESSERA_CODEGEN_PERTURB=add
  run mismatch
  hit && fail "the perturbed run loaded the clean run's entry"
  run mismatch
  hit || fail "the perturbed run's own entry was not loaded"
  unset TESSERA_CODEGEN_PERTURB
  run match
  hit || fail "the clean entry was not loaded"
  [ "$(entries "$tmp/c")" = 2 ] || fail "$(entries "$tmp/c") entries, want 2"
  ;;
unwritable)
  : >"$tmp/afile"
  export TESSERA_CACHE_DIR="$tmp/afile"
  run match
  [ "$(warnings)" = 1 ] || fail "$(warnings) cache warnings for a folder that cannot be made, want 1"
  grep 'warning: kernel cache' "$tmp/err$n" | grep -q 'not cached' || fail "the warning does not say so"
  mkdir "$tmp/ro"
  chmod 555 "$tmp/ro"
  # root writes through mode bits: make the folder immutable instead, where allowed
  (: >"$tmp/ro/probe") 2>/dev/null && rm -f "$tmp/ro/probe" && chattr +i "$tmp/ro" 2>/dev/null
  if (: >"$tmp/ro/probe") 2>/dev/null; then
    echo "note: a read-only folder is writable here (root without chattr); that part is skipped"
  else
    export TESSERA_CACHE_DIR="$tmp/ro"
    run match
    [ "$(warnings)" = 1 ] || fail "$(warnings) cache warnings for a read-only folder, want 1"
  fi
  ;;
off)
  unset TESSERA_CACHE_DIR
  run match --no-kernel-cache
  [ -e "$HOME/.cache" ] && fail "--no-kernel-cache made $HOME/.cache"
  for v in "" off; do
    export TESSERA_CACHE_DIR="$v"
    run match
    [ "$(ls -A "$tmp/cwd")" = "" ] || fail "TESSERA_CACHE_DIR='$v' wrote into the working folder: $(ls -A "$tmp/cwd")"
    [ -e "$HOME/.cache" ] && fail "TESSERA_CACHE_DIR='$v' made $HOME/.cache"
  done
  # the defaults do write: the runs above could have
  unset TESSERA_CACHE_DIR
  export XDG_CACHE_HOME="$tmp/xdg"
  run match
  [ "$(entries "$tmp/xdg/tessera/kernels")" = 1 ] || fail "nothing in \$XDG_CACHE_HOME/tessera/kernels"
  unset XDG_CACHE_HOME
  run match
  [ "$(entries "$HOME/.cache/tessera/kernels")" = 1 ] || fail "nothing in ~/.cache/tessera/kernels"
  ;;
concurrent)
  export TESSERA_CACHE_DIR="$tmp/c"
  mkdir -p "$tmp/cwd"
  for k in 1 2 3 4; do
    (cd "$tmp/cwd" && exec timeout 280 "$tessera" run --devices 1 --check "$file") >"$tmp/cout$k" 2>"$tmp/cerr$k" &
    pids="$pids $!"
  done
  for p in $pids; do wait "$p" || fail "a concurrent run failed"; done
  pids=
  for k in 1 2 3 4; do
    sed "s/^/[run $k] /" "$tmp/cout$k" "$tmp/cerr$k"
    grep -q '^check: match' "$tmp/cout$k" || fail "concurrent run $k: no match"
    grep -q 'warning: kernel cache' "$tmp/cerr$k" && fail "concurrent run $k warned"
  done
  [ "$(entries "$tmp/c")" = 1 ] || fail "$(entries "$tmp/c") entries, want 1"
  [ "$(find "$tmp/c" -type f | wc -l)" = 1 ] || fail "files left beside the entry: $(find "$tmp/c" -type f)"
  run match
  hit || fail "the entry the concurrent runs wrote does not load"
  [ "$(warnings)" = 0 ] || fail "a warning loading it"
  ;;
diskfull)
  mkdir "$tmp/fs"
  mount -t tmpfs -o size=4k tmpfs "$tmp/fs" 2>/dev/null || { echo "SKIP: cannot mount a tmpfs here"; exit 77; }
  export TESSERA_CACHE_DIR="$tmp/fs/c"
  for k in 1 2; do
    run match
    [ "$(warnings)" = 1 ] || fail "$(warnings) cache warnings on a full file system, want 1"
    grep 'warning: kernel cache' "$tmp/err$n" | grep -q 'No space left on device' || fail "the warning does not name ENOSPC"
    hit && fail "an entry was loaded from a full file system"
    [ "$(find "$tmp/fs" -type f | wc -l)" = 0 ] || fail "files left on the full file system: $(find "$tmp/fs" -type f)"
  done
  ;;
*) fail "unknown case" ;;
esac
echo ok
