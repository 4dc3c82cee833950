#!/bin/sh
# tessera check over every propagation module (they are partitioner tests
# too): partition for N devices, run on N simulated devices, compare with the
# reference interpreter. Prints one line per module and a summary. Slow (not
# a CTest test). usage: check_all.sh TESSERA CORPUS_DIR [TIMEOUT_S]
tessera=$1 dir=$2 limit=${3:-60}
[ -f "$dir/expectations.jsonl" ] || { echo "skipped: $dir not found"; exit 77; }
ran=0 ok=0 total=0
tmp=$(mktemp)
python3 -c '
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    print(r["file"], max(2, r["num_partitions"]))
' "$dir/expectations.jsonl" > "$tmp"
while read -r f n; do
  total=$((total + 1))
  out=$(timeout "$limit" "$tessera" check --num-partitions "$n" "$dir/$f" 2>&1)
  rc=$?
  case $rc in
    0) ran=$((ran + 1)); ok=$((ok + 1)); echo "match    $f (N=$n)" ;;
    1) ran=$((ran + 1)); echo "MISMATCH $f (N=$n): $(echo "$out" | grep -m1 -i 'mismatch\|differ\|error')" ;;
    124) echo "TIMEOUT  $f (N=$n)" ;;
    *) echo "NOT RUN  $f (N=$n, exit $rc): $(echo "$out" | grep -m1 error)" ;;
  esac
done < "$tmp"
rm -f "$tmp"
echo "tessera check over propagation modules: $total modules, $ran ran, $ok match"
