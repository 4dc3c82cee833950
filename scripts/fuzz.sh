#!/usr/bin/env bash
# Builds the libFuzzer parser target (clang, build-fuzz/) and fuzzes the HLO
# parser for SECONDS (default 60), seeded from the shared corpus, the bad-input
# tests and the examples. Exits non-zero when the fuzzer finds a crash, leak,
# timeout or OOM; the input that triggered it stays in fuzz-out/.
#   scripts/fuzz.sh [SECONDS]
set -euo pipefail

secs=${1:-60}
if ! [[ $secs =~ ^[0-9]+$ ]] || [ "$secs" -eq 0 ]; then
  echo "usage: scripts/fuzz.sh [SECONDS]   (a positive number of seconds, default 60)" >&2
  exit 2
fi

cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$(pwd)

./scripts/install-deps.sh

gen=()
[ -f build-fuzz/CMakeCache.txt ] || gen=(-G Ninja)
cmake -S . -B build-fuzz "${gen[@]}" -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DTESSERA_FUZZ=ON -DTESSERA_SANITIZE=OFF
cmake --build build-fuzz --target fuzz_parser -j2
fuzzer=$root/build-fuzz/tests/fuzz_parser

# Seeds: every module we know of that fits in -max_len. Copies are named after
# their origin so that reruns overwrite instead of piling up.
out=$root/fuzz-out
corpus=$out/corpus
mkdir -p "$corpus"
max_len=65536
nseeds=0
seed() { # seed PREFIX FILE...
  local prefix=$1 f
  shift
  for f in "$@"; do
    [ -f "$f" ] || continue
    [ "$(stat -c %s "$f")" -le $max_len ] || continue
    cp -f "$f" "$corpus/seed.$prefix.$(basename "$f")"
    nseeds=$((nseeds + 1))
  done
}
shopt -s nullglob globstar
if [ -d ../shared/corpus ]; then
  seed shared ../shared/corpus/**/*.hlo ../shared/corpus/real_hlo/*.txt
else
  echo "fuzz: ../shared/corpus not found; seeding from this repository only"
fi
seed bad_input tests/bad_input/*.hlo
seed examples examples/*.hlo
echo "fuzz: $nseeds seed files, $(find "$corpus" -type f | wc -l) inputs in $corpus"

# Artifacts of an earlier run would be reported again; keep them apart.
for old in "$out"/crash-* "$out"/leak-* "$out"/timeout-* "$out"/oom-* "$out"/slow-unit-*; do
  mkdir -p "$out/old"
  mv -f "$old" "$out/old/"
done

log=$out/fuzz.log
echo "fuzz: running $fuzzer for ${secs}s (log: $log)"
set +e
"$fuzzer" -max_total_time="$secs" -max_len=$max_len -dict="$root/tests/fuzz/dict.txt" \
  -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 -artifact_prefix="$out/" \
  "$corpus" 2>&1 | tee "$log" | grep -v -E '^#[0-9]+[[:space:]]+(NEW|REDUCE|pulse)'
rc=${PIPESTATUS[0]}
set -e

echo "fuzz: --- summary ---"
grep -E '^#[0-9]+[[:space:]]+(INITED|DONE)|^Done [0-9]+ runs|^stat::average_exec_per_sec' "$log" || true
echo "fuzz: corpus now holds $(find "$corpus" -type f | wc -l) inputs"
artifacts=("$out"/crash-* "$out"/leak-* "$out"/timeout-* "$out"/oom-*)
if [ "$rc" -ne 0 ] || [ ${#artifacts[@]} -gt 0 ]; then
  echo "fuzz: FAILED (fuzzer exit code $rc)" >&2
  for a in "${artifacts[@]}"; do
    echo "fuzz: reproducer kept: $a (rerun: $fuzzer $a)" >&2
  done
  exit 1
fi
echo "fuzz: ok, no crashes in ${secs}s"
