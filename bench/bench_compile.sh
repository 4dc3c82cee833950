#!/usr/bin/env bash
# Compile time against module size (issue 19): bench_compile's per-stage wall
# and CPU seconds on bench/gen_module.py modules, and the whole `tessera run
# --compile-only` under /usr/bin/time, with the load average beside each.
#   bench/bench_compile.sh [BUILD_DIR [SIZE...]]   (default: build 10000 100000 1000000)
set -euo pipefail
build=${1:-build}
shift || true
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(10000 100000 1000000)
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mkdir -p "$build/gen"
files=()
for n in "${sizes[@]}"; do
  f=$build/gen/gen_$n.hlo
  [ -s "$f" ] || python3 "$root/bench/gen_module.py" -n "$n" -o "$f"
  files+=("$f")
done
echo "# load average: $(cut -d' ' -f1-3 /proc/loadavg)"
"$build/bench/bench_compile" --reps 1 "${files[@]}"
echo "# tessera run --compile-only (wall s, user s, sys s, max RSS KiB; load average before)"
for f in "${files[@]}"; do
  load=$(cut -d' ' -f1 /proc/loadavg)
  t=$( { /usr/bin/time -f "%e %U %S %M" "$build/launcher/tessera" run --compile-only "$f" >/dev/null; } 2>&1 | tail -1)
  echo "  $(basename "$f") $t load $load"
done
