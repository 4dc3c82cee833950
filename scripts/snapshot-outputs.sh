#!/usr/bin/env bash
# Records what a tessera binary prints for every module of the examples and the
# corpus (each opt stage, --compile-only, check on the examples), one file per
# command with its exit code, so that two builds can be compared byte for byte:
#   scripts/snapshot-outputs.sh BIN OUTDIR     # record
#   diff -r OUTDIR_BEFORE OUTDIR_AFTER         # compare
# Used to prove that a refactor changes no behaviour.
set -uo pipefail
bin=$(realpath "$1")
out=$2
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
corpus=$root/../shared/corpus
mkdir -p "$out"

files=("$root"/examples/*.hlo)
for d in xla_spmd real_hlo real_hlo_large xla_tests/parser_valid xla_tests/parser_invalid \
         xla_tests/propagation xla_tests/real xla_tests/repros; do
  [ -d "$corpus/$d" ] || continue
  for f in "$corpus/$d"/*.hlo "$corpus/$d"/*.txt; do
    [ -f "$f" ] && files+=("$f")
  done
done

record() {  # NAME CMD...: stdout, stderr and the exit code of CMD, paths made relative
  local name=$1; shift
  (cd "$root" && timeout 60 "$@" >"$out/$name.out" 2>"$out/$name.err"; echo "rc=$?" >"$out/$name.rc")
  # paths made relative, and times (the only run-to-run noise) masked: "in
  # 1.2 ms", and the fusion and codegen clocks of run --compile-only's
  # "compiled kernels" line, and whether its kernel cache hit
  sed -i -E "s#$root#ROOT#g; s#$corpus#CORPUS#g; s/in [0-9.]+ (ms|s)\b/in T \1/g;
             /^compiled kernels:/s/[0-9]+\.[0-9]+/T/g; /^compiled kernels:/s/kernel cache (hit|miss|off)/kernel cache C/" \
    "$out/$name.out" "$out/$name.err"
}

n=0
for f in "${files[@]}"; do
  key=$(echo "${f#"$root"/}" | sed 's#[/.]#_#g')
  for st in parsed verified propagated fused; do
    record "$key.$st" "$bin" opt --stage=$st "$f"
  done
  if grep -q 'num_partitions=[2-9]' "$f"; then
    record "$key.partitioned" "$bin" opt --stage=partitioned "$f"
    record "$key.scheduled" "$bin" opt --stage=scheduled "$f"
    record "$key.compile" "$bin" run --compile-only "$f"
  fi
  n=$((n + 1))
done
for f in "$root"/examples/*.hlo; do
  key=$(basename "$f" .hlo)
  record "check_$key" "$bin" check "$f"
done
echo "snapshot-outputs: $n modules recorded in $out"
