#!/bin/sh
# Checkpoint faults and tools, one scenario per invocation:
#   faults.sh TESSERA SRC_DIR WORK CASE
# CASE: corrupt (a flipped byte: --resume and inspect refuse, naming the file),
# truncated (a short shard: likewise), mismatch (a module whose parameter
# shapes differ: --resume refuses naming the first one), diskfull (a 200 KiB
# tmpfs fills up: that checkpoint fails with a warning, the job goes on,
# older checkpoints stay intact and resumable; exit 77 = skipped when tmpfs
# cannot be mounted), assemble (tessera checkpoint assemble gives the same
# bytes as --outputs of the same steps), usage (flag errors). Every expected exit code and
# message is checked.
set -u
T=$1
SRC=$2
W=$3
CASE=$4
MLP=$SRC/examples/mlp_train.hlo
rm -rf "$W"
mkdir -p "$W"

fail() {
  echo "FAIL: $*"
  exit 1
}

# want_rc RC LOG: the last command's exit code was RC
want() {
  [ "$1" = "$2" ] || { cat "$3"; fail "exit $2, want $1 ($3)"; }
}

has() {
  grep -qF -- "$2" "$1" || { cat "$1"; fail "$1 lacks: $2"; }
}

train() { # DIR STEPS EVERY [flags...]
  d=$1 s=$2 e=$3
  shift 3
  "$T" run --devices 4 --steps "$s" --loop --checkpoint-dir "$d" --checkpoint-every "$e" "$@" "$MLP" \
    >"$W/train.log" 2>&1 || { cat "$W/train.log"; fail "training run failed"; }
}

case $CASE in
corrupt)
  train "$W/ck" 10 5
  # One byte of a shard's data, in place.
  printf '\377' | dd of="$W/ck/step-10/p0.s1.npy" bs=1 seek=1000 conv=notrunc 2>/dev/null
  "$T" run --devices 4 --steps 20 --loop --resume "$W/ck" "$MLP" >"$W/resume.log" 2>&1
  want 2 $? "$W/resume.log"
  has "$W/resume.log" "$W/ck/step-10/p0.s1.npy"
  has "$W/resume.log" "checksum mismatch"
  "$T" checkpoint inspect "$W/ck" >"$W/inspect.log" 2>&1
  want 2 $? "$W/inspect.log"
  has "$W/inspect.log" "BAD $W/ck/step-10/p0.s1.npy"
  has "$W/inspect.log" "checksums: INVALID"
  # The older checkpoint is still good.
  "$T" checkpoint inspect "$W/ck" --step 5 >"$W/inspect5.log" 2>&1
  want 0 $? "$W/inspect5.log"
  has "$W/inspect5.log" "checksums: valid"
  ;;
truncated)
  train "$W/ck" 10 5
  f=$W/ck/step-10/p2.s0.npy
  head -c 5000 "$f" >"$f.cut" && mv "$f.cut" "$f"
  "$T" run --devices 4 --steps 20 --loop --resume "$W/ck" "$MLP" >"$W/resume.log" 2>&1
  want 2 $? "$W/resume.log"
  has "$W/resume.log" "$f"
  has "$W/resume.log" "truncated"
  ;;
mismatch)
  train "$W/ck" 10 5
  python3 "$SRC/examples/gen_mlp_train.py" --hidden 256 -o "$W/mlp_h256.hlo" || fail "gen_mlp_train.py"
  "$T" run --devices 4 --steps 20 --loop --resume "$W/ck" "$W/mlp_h256.hlo" >"$W/resume.log" 2>&1
  want 2 $? "$W/resume.log"
  has "$W/resume.log" "parameter 0 (params['w1']) is f32[256,256] in the module but f32[256,512] in the checkpoint"
  # Another seed than the checkpoint's is refused too.
  "$T" run --devices 4 --steps 20 --loop --random-inputs 7 --resume "$W/ck" "$MLP" >"$W/seed.log" 2>&1
  want 2 $? "$W/seed.log"
  has "$W/seed.log" "--random-inputs 7, but the checkpoint was trained on seed 0"
  ;;
diskfull)
  mkdir -p "$W/fs"
  mount -t tmpfs -o size=200k tmpfs "$W/fs" 2>/dev/null || { echo "SKIP: cannot mount a tmpfs here"; exit 77; }
  trap 'umount "$W/fs" 2>/dev/null' EXIT
  # ~41 KB of state a checkpoint: a few fit in 200 KiB, then no more.
  python3 "$SRC/examples/gen_mlp_train.py" --in 64 --hidden 128 --model 1 -o "$W/small.hlo" || fail "gen_mlp_train.py"
  MLP=$W/small.hlo
  "$T" run --devices 2 --steps 20 --loop --outputs "$W/ref" "$MLP" >"$W/ref.log" 2>&1 || fail "uninterrupted run"
  "$T" run --devices 2 --steps 20 --loop --checkpoint-dir "$W/fs/ck" --checkpoint-every 2 --keep 10 "$MLP" \
    >"$W/full.log" 2>&1
  want 0 $? "$W/full.log"
  # The first checkpoint that did not fit (tmpfs counts whole pages per
  # file: about 60 KiB a checkpoint), and the one before it.
  F=$(sed -n 's/.*warning: checkpoint step \([0-9]*\) failed.*/\1/p' "$W/full.log" | head -n 1)
  [ -n "$F" ] && [ "$F" -ge 4 ] || { cat "$W/full.log"; fail "no checkpoint failed, or the first one did"; }
  G=$((F - 2))
  has "$W/full.log" "warning: checkpoint step $F failed (device"
  has "$W/full.log" "No space left on device"
  has "$W/full.log" "training goes on; the newest complete checkpoint is $W/fs/ck/step-$G"
  has "$W/full.log" "step 20 time_ms"
  [ -d "$W/fs/ck/step-$F.tmp" ] && fail "the failed checkpoint's step-$F.tmp was left behind"
  "$T" checkpoint inspect "$W/fs/ck" >"$W/inspect.log" 2>&1
  want 0 $? "$W/inspect.log"
  has "$W/inspect.log" "$((G / 2)) complete checkpoints (steps 2, 4"
  has "$W/inspect.log" "$W/fs/ck/step-$G: step $G of module"
  has "$W/inspect.log" "checksums: valid"
  # Resumable, and exact (read-only use of the full disk).
  "$T" run --devices 2 --steps 20 --loop --resume "$W/fs/ck" --outputs "$W/res" "$MLP" >"$W/res.log" 2>&1
  want 0 $? "$W/res.log"
  has "$W/res.log" "resumed from $W/fs/ck/step-$G"
  for f in "$W"/ref/*.npy; do
    cmp -s "$f" "$W/res/$(basename "$f")" || fail "$(basename "$f") differs after resuming from the full disk"
  done
  ;;
assemble)
  train "$W/ck" 10 10 --outputs "$W/out"
  "$T" checkpoint assemble "$W/ck" --step 10 -o "$W/asm" >"$W/asm.log" 2>&1
  want 0 $? "$W/asm.log"
  has "$W/asm.log" "param0.npy: params['w1']"
  # Output leaf k+1 of the MLP step is parameter k (input_output_alias).
  for k in 0 1 2 3; do
    cmp -s "$W/asm/param$k.npy" "$W/out/out$((k + 1)).npy" || fail "param$k.npy differs from out$((k + 1)).npy"
  done
  "$T" checkpoint inspect "$W/ck" >"$W/inspect.log" 2>&1
  want 0 $? "$W/inspect.log"
  has "$W/inspect.log" "1 complete checkpoint (step 10)"
  has "$W/inspect.log" "params['w1']"
  has "$W/inspect.log" "{devices=[1,2,2]<=[2,2]T(1,0) last_tile_dim_replicate}: 2 shards"
  has "$W/inspect.log" "checksums: valid"
  ;;
usage)
  "$T" run --devices 4 --steps 4 --checkpoint-dir "$W/ck" "$MLP" >"$W/u1.log" 2>&1
  want 2 $? "$W/u1.log"
  has "$W/u1.log" "--checkpoint-dir and --resume need --loop"
  "$T" run --devices 4 --steps 4 --loop --checkpoint-every 2 "$MLP" >"$W/u2.log" 2>&1
  want 2 $? "$W/u2.log"
  has "$W/u2.log" "--checkpoint-every needs --checkpoint-dir DIR"
  "$T" run --devices 4 --steps 4 --loop --checkpoint-dir "$W/ck" --checkpoint-every 0 "$MLP" >"$W/u3.log" 2>&1
  want 2 $? "$W/u3.log"
  has "$W/u3.log" "--checkpoint-every wants a positive integer, got '0'"
  "$T" run --devices 1 --steps 4 --loop --checkpoint-dir "$W/ck" "$MLP" >"$W/u4.log" 2>&1
  want 2 $? "$W/u4.log"
  has "$W/u4.log" "need the runtime"
  # Every checkpoint at or past --steps: nothing left to run.
  train "$W/ck" 4 2
  "$T" run --devices 4 --steps 2 --loop --resume "$W/ck" "$MLP" >"$W/u5.log" 2>&1
  want 2 $? "$W/u5.log"
  has "$W/u5.log" "every checkpoint there (the oldest: step 2) is at or past --steps 2"
  # None at all: a warning, and the run starts at step 1.
  "$T" run --devices 4 --steps 2 --loop --resume "$W/none" "$MLP" >"$W/u6.log" 2>&1
  want 0 $? "$W/u6.log"
  has "$W/u6.log" "no complete checkpoint there; starting from step 1"
  has "$W/u6.log" "step 1 time_ms"
  ;;
*)
  fail "unknown case $CASE"
  ;;
esac
echo "ok $CASE"
