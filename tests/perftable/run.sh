#!/bin/sh
# One tessera perf-table scenario per call (tests/perftable/perftable.cmake registers
# each as its own test). The expected entries are listed here by plain loops
# over the sweep's definition, not by the code under test, and compared with
# what pt_dump reads back from the written table through the cost model.
#   run.sh SCENARIO TESSERA PT_DUMP SOURCE_DIR [MPIRUN_SH]
set -u
scenario=$1 tessera=$2 dump=$3 src=$4 mpirun=${5:-}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# expect KINDS SCHEMES D G SIZES...: one line per kind x scheme x size (F32).
expect() {
  kinds=$1 schemes=$2 d=$3 g=$4
  shift 4
  for k in $kinds; do for s in $schemes; do for b in "$@"; do
    echo "$k $s $d $g F32 $b"
  done; done; done
}
grouped="all-reduce all-gather reduce-scatter all-to-all"

# same_entries TABLE EXPECTED_FILE: the table holds exactly those entries.
same_entries() {
  "$dump" "$1" >"$dir/got.raw" || fail "pt_dump $1 failed"
  sort "$dir/got.raw" >"$dir/got"
  sort "$2" >"$dir/want"
  if ! cmp -s "$dir/got" "$dir/want"; then
    echo "entries differ (< got, > want):"
    diff "$dir/got" "$dir/want" | head -20
    fail "table $1"
  fi
  echo "ok: $(wc -l <"$dir/got") entries as expected in $1"
}

# svg_count SVG PANELS SERIES: a well-formed SVG with that many panels and lines.
svg_count() {
  [ -s "$1" ] || fail "no plot $1"
  command -v python3 >/dev/null || { echo "note: no python3, plot not parsed"; return 0; }
  python3 - "$1" "$2" "$3" <<'EOF' || fail "plot $1"
import sys, xml.etree.ElementTree as ET
ns = "{http://www.w3.org/2000/svg}"
root = ET.parse(sys.argv[1]).getroot()
groups = list(root.iter(ns + "g"))
panels = [g for g in groups if g.get("class") == "panel"]
series = [g for g in groups if g.get("class") == "series"]
want_p, want_s = int(sys.argv[2]), int(sys.argv[3])
if len(panels) != want_p or len(series) != want_s:
    sys.exit("plot has %d panels and %d series, want %d and %d" % (len(panels), len(series), want_p, want_s))
for s in series:
    for c in s.iter(ns + "circle"):
        float(c.get("cx")); float(c.get("cy"))
print("ok: plot with %d panels, %d series" % (want_p, want_s))
EOF
}

# xla_header TABLE MESSAGE: the text table names its message as XLA's files do.
xla_header() {
  head -2 "$1" | grep -q "proto-message: $2" || fail "no XLA header"
}

# scores TABLE N: tessera perf-table check passes and scores all N points.
scores() {
  "$tessera" perf-table check "$1" >"$dir/check" || fail "check failed"
  grep -Eq "^  all +$2 " "$dir/check" || { cat "$dir/check"; fail "check did not score $2 points"; }
}

case $scenario in
threads)
  # 4 in-process ranks (lcm of 2 and 4): groups of 2 twice over (contiguous and
  # strided), one group of 4 (one layout); permutes: 2 patterns at 2, 3 at 4.
  "$tessera" perf-table collectives --group-sizes=2,4 -b 1K -e 16K -n 3 -w 1 --progress=lines \
    -o "$dir/t.txtpb" >"$dir/out" 2>"$dir/err" || { cat "$dir/err"; fail "sweep failed"; }
  sizes="1024 2048 4096 8192 16384"
  {
    expect "$grouped" "non-rail-aligned rail-aligned" 2 2 $sizes
    expect "collective-permute" "one-way two-way-all-mutual" 2 1 $sizes
    expect "$grouped" "non-rail-aligned" 4 1 $sizes
    expect "collective-permute" "one-way two-way-all-mutual two-way-has-non-mutual" 4 1 $sizes
  } >"$dir/want.raw"
  same_entries "$dir/t.txtpb" "$dir/want.raw"
  grep -q '^tessera perf-table: \[85/85\] collective-permute ' "$dir/err" || fail "no progress line [85/85]"
  grep -q '^tessera perf-table: done: 85 points in ' "$dir/err" || fail "no final progress line"
  grep -q "^# wrote $dir/t.txtpb and its plot $dir/t.svg" "$dir/out" || fail "no 'wrote' line"
  xla_header "$dir/t.txtpb" xla.gpu.DeviceHloInstructionProfiles
  grep -q '^  key: "host:' "$dir/t.txtpb" || fail "device key is not host:<cpu model>"
  # 4 grouped kinds x 3 (D, layout) lines + permute 2 + 3 lines
  svg_count "$dir/t.svg" 5 17
  scores "$dir/t.txtpb" 85
  ;;
binary)
  # A .pb table reads back through the binary reader.
  "$tessera" perf-table collectives --devices 2 --group-sizes=2 --collectives=all-reduce,collective-permute \
    -b 1K -e 4K -n 2 -w 0 --progress=none -o "$dir/t.pb" >/dev/null || fail "sweep failed"
  {
    expect "all-reduce" "non-rail-aligned" 2 1 1024 2048 4096
    expect "collective-permute" "one-way two-way-all-mutual" 2 1 1024 2048 4096
  } >"$dir/want.raw"
  same_entries "$dir/t.pb" "$dir/want.raw"
  [ -s "$dir/t.svg" ] || fail "no plot next to t.pb"
  ;;
protoc)
  command -v protoc >/dev/null || { echo "skipped: protoc not installed"; exit 77; }
  "$tessera" perf-table collectives --devices 2 --group-sizes=2 --collectives=all-reduce,collective-permute \
    -b 1K -e 4K -n 2 -w 0 --progress=none -o "$dir/t.pb" >/dev/null || fail "sweep failed"
  protoc --proto_path="$src/costmodel" --decode=xla.DeviceHloInstructionProfiles "$src/costmodel/perf_tables.proto" \
    <"$dir/t.pb" >"$dir/decoded" 2>"$dir/err" || { cat "$dir/err"; fail "protoc --decode failed"; }
  n=$(grep -c 'network_throughput_bytes_per_sec: [1-9]' "$dir/decoded")
  [ "$n" = 9 ] || fail "protoc decoded $n throughputs, want 9"
  [ "$(grep -c 'opcode: "collective-permute"' "$dir/decoded")" = 6 ] || fail "want 6 collective-permute entries"
  grep -q 'num_devices_per_group: 2' "$dir/decoded" || fail "no device list"
  echo "ok: protoc decodes 9 entries"
  ;;
merge)
  run() { "$tessera" perf-table collectives --devices 2 --group-sizes=2 -b 1K -e 2K -n 2 -w 0 --progress=none \
    -o "$dir/t.txtpb" "$@" >/dev/null || fail "sweep $* failed"; }
  run --collectives=all-reduce
  run --collectives=all-gather
  run --collectives=all-reduce # measured again: replaces its entries
  { expect "all-reduce all-gather" "non-rail-aligned" 2 1 1024 2048; } >"$dir/want.raw"
  same_entries "$dir/t.txtpb" "$dir/want.raw"
  run --collectives=all-to-all --no-merge
  expect "all-to-all" "non-rail-aligned" 2 1 1024 2048 >"$dir/want.raw"
  same_entries "$dir/t.txtpb" "$dir/want.raw"
  ;;
mpi)
  # 2 ranks: of the default group sizes only 2 divides the world (a note says so).
  sh "$mpirun" 2 "$tessera" perf-table collectives -b 1K -e 8K -n 3 -w 1 --progress=lines -o "$dir/t.txtpb" \
    >"$dir/out" 2>"$dir/err" || { cat "$dir/err"; fail "mpirun sweep failed"; }
  grep -q 'note: group sizes 2 (of the default 2,4,8: those that divide the world of 2 ranks)' "$dir/err" ||
    { cat "$dir/err"; fail "no note about the group sizes"; }
  [ "$(grep -c 'note: group sizes' "$dir/err")" = 1 ] || fail "the note is printed by more than one rank"
  grep -q '^# tessera perf-table collectives: 2 ranks (mpi)' "$dir/out" || fail "not the mpi world"
  {
    expect "$grouped" "non-rail-aligned" 2 1 1024 2048 4096 8192
    expect "collective-permute" "one-way two-way-all-mutual" 2 1 1024 2048 4096 8192
  } >"$dir/want.raw"
  same_entries "$dir/t.txtpb" "$dir/want.raw"
  svg_count "$dir/t.svg" 5 6
  # In-process ranks under mpirun would have every process write the table.
  sh "$mpirun" 2 "$tessera" perf-table collectives --devices 2 -o "$dir/u.txtpb" >/dev/null 2>"$dir/err"
  rc=$?
  [ $rc = 2 ] || fail "--devices under mpirun: exit $rc, want 2"
  grep -q '^tessera perf-table: error: in-process ranks under mpirun' "$dir/err" || { cat "$dir/err"; fail "message"; }
  ;;
gemm)
  "$tessera" perf-table gemm --batch=1,2 -b 16 -e 32 --types='f32,bf16xbf16->f32' -n 2 -w 1 --progress=lines \
    -o "$dir/g.txtpb" >"$dir/out" 2>"$dir/err" || { cat "$dir/err"; fail "gemm sweep failed"; }
  for t in 'f32xf32->f32' 'bf16xbf16->f32'; do for b in 1 2; do for m in 16 32; do for n in 16 32; do for k in 16 32; do
    echo "$t $b $m $n $k"
  done; done; done; done; done >"$dir/want.raw"
  same_entries "$dir/g.txtpb" "$dir/want.raw"
  xla_header "$dir/g.txtpb" xla.GemmPerfTable
  grep -q '^tessera perf-table: \[32/32\] bf16xbf16->f32 b=2 m=32 n=32 k=32: ' "$dir/err" || fail "no progress [32/32]"
  svg_count "$dir/g.svg" 2 4
  scores "$dir/g.txtpb" 32
  ;;
memcap)
  # With 1 MiB free, two buffers per rank for 2 ranks fit in 80% up to 128K.
  TESSERA_PERF_TABLE_FREE_BYTES=1M "$tessera" perf-table collectives --devices 2 --group-sizes=2 \
    --collectives=all-reduce -b 1K -e 1M -n 2 -w 0 --progress=none -o "$dir/t.txtpb" >/dev/null 2>"$dir/err" ||
    { cat "$dir/err"; fail "capped sweep failed"; }
  grep -q 'note: the largest size is capped at 128K (instead of 1M) by free memory' "$dir/err" ||
    { cat "$dir/err"; fail "no note about the cap"; }
  expect "all-reduce" "non-rail-aligned" 2 1 1024 2048 4096 8192 16384 32768 65536 131072 >"$dir/want.raw"
  same_entries "$dir/t.txtpb" "$dir/want.raw"
  TESSERA_PERF_TABLE_FREE_BYTES=16K "$tessera" perf-table collectives --devices 2 --group-sizes=2 -b 1K -e 4K \
    --progress=none -o "$dir/u.txtpb" >/dev/null 2>"$dir/err"
  rc=$?
  [ $rc = 3 ] || fail "exit $rc when nothing fits, want 3"
  grep -q 'error: not even -b 1K fits in free memory' "$dir/err" || fail "no message when nothing fits"
  [ ! -e "$dir/u.txtpb" ] || fail "a table was written"
  echo "ok: capped at 128K; nothing fits: exit 3"
  ;;
bar)
  # --progress=bar draws in place: carriage returns, a percentage, the ETA.
  "$tessera" perf-table collectives --devices 2 --group-sizes=2 --collectives=all-reduce -b 1K -e 4K -n 2 -w 0 \
    --progress=bar -o "$dir/t.txtpb" >/dev/null 2>"$dir/err" || fail "sweep failed"
  tr '\r' '\n' <"$dir/err" >"$dir/lines"
  grep -q '^\[#*\] 100% 3/3 ETA ' "$dir/lines" || { cat "$dir/lines"; fail "no full bar"; }
  grep -q '^tessera perf-table: done: 3 points in ' "$dir/lines" || fail "no final line"
  echo "ok: progress bar"
  ;;
rounds)
  # --rounds 3: every point measured three times, one entry each (the median).
  "$tessera" perf-table collectives --devices 2 --group-sizes=2 --collectives=all-gather -b 1K -e 2K -n 2 -w 1 \
    --rounds 3 --progress=lines -o "$dir/t.txtpb" >"$dir/out" 2>"$dir/err" || { cat "$dir/err"; fail "sweep failed"; }
  grep -q '^tessera perf-table: \[6/6\] all-gather non-rail-aligned 1x2 f32 2K: .* (round 3/3) ' "$dir/err" ||
    { cat "$dir/err"; fail "no progress line of round 3"; }
  grep -q '^# tessera perf-table collectives: 2 ranks (threads), .*, 3 rounds$' "$dir/out" || fail "header"
  expect "all-gather" "non-rail-aligned" 2 1 1024 2048 >"$dir/want.raw"
  same_entries "$dir/t.txtpb" "$dir/want.raw"
  ;;
loo_golden)
  # Three all-reduce points over 2 devices, 1K/2K/4K at 1, 2, 4 GB/s (by hand
  # in loo_golden.txtpb): each takes 1024 B / 1 GB/s = 1.024 us. Leave-one-out
  # by hand, APE of time:
  #   weighted (time linear in size between the neighbours; the smallest
  #     size's time below them, the largest's throughput beyond):
  #     1K -> 2K's time 1.024 us: 0%; 2K -> between 1K and 4K, both 1.024 us:
  #     0%; 4K -> 4096 B / 2 GB/s = 2.048 us: 100%. MAPE 33.33, max 100
  #   nearest (snap; ties go up): 1K -> 2K: 50%, 2K -> 1K (closer): 100%,
  #     4K -> 2K: 100%: MAPE 83.33, max 100
  "$tessera" perf-table check "$src/tests/perftable/loo_golden.txtpb" >"$dir/check" || fail "check failed"
  cat "$dir/check"
  grep -Eq '^  all-reduce non-rail-aligned +3 +33\.33 +100\.00 +83\.33 +100\.00$' "$dir/check" || fail "per-key row"
  grep -Eq '^  all +3 +33\.33 +100\.00 +83\.33 +100\.00$' "$dir/check" || fail "overall row"
  "$tessera" perf-table check --mode=nearest --max-mape=80 "$src/tests/perftable/loo_golden.txtpb" >/dev/null 2>&1
  [ $? = 1 ] || fail "--max-mape=80 with nearest MAPE 83.33 should exit 1"
  "$tessera" perf-table check --mode=weighted --max-mape=40 "$src/tests/perftable/loo_golden.txtpb" >/dev/null ||
    fail "--max-mape=40 with weighted MAPE 33.33 should pass"
  ;;
corpus)
  # XLA's own tables (../shared): every device scored. Point counts from the
  # reference (cost_models.md §3.3-3.4): 375 GEMM entries x 5 dtypes on sm_90
  # and sm_100_B200; on gfx942 4 dtypes (its leading duplicate counts once);
  # the collective excerpt holds 18 entries.
  d=$src/../shared/corpus/xla_perf_tables
  [ -d "$d" ] || { echo "skipped: $d not found"; exit 77; }
  "$tessera" perf-table check "$d/default_matmul_perf_table.txtpb" "$d/default_collective_perf_table.txtpb" \
    >"$dir/check" 2>"$dir/err" || { cat "$dir/err"; fail "check failed"; }
  cat "$dir/check"
  grep -q "^# device 'sm_90': 1875 points" "$dir/check" || fail "sm_90"
  grep -q "^# device 'sm_100_B200': 1875 points" "$dir/check" || fail "sm_100_B200 GEMMs"
  grep -q "^# device 'gfx942': 1500 points" "$dir/check" || fail "gfx942"
  grep -q "^# device 'sm_100_B200': 18 points" "$dir/check" || fail "the collective excerpt"
  ;;
bad_merge)
  # An existing table that does not parse is not overwritten: exit 2 before
  # anything is measured, the file untouched.
  printf 'entries { key: "x" value { entries { bogus: 1 } } }\n' >"$dir/t.txtpb"
  cp "$dir/t.txtpb" "$dir/keep"
  "$tessera" perf-table collectives --devices 2 --group-sizes=2 -b 1K -e 1K -o "$dir/t.txtpb" >/dev/null 2>"$dir/err"
  rc=$?
  [ $rc = 2 ] || fail "exit $rc, want 2"
  grep -q "^tessera perf-table: error: cannot merge into '$dir/t.txtpb' (use --no-merge to replace it)" "$dir/err" ||
    { cat "$dir/err"; fail "message"; }
  head -1 "$dir/err" | grep -q "^$dir/t.txtpb:1:" || { cat "$dir/err"; fail "the parse error is not located"; }
  cmp -s "$dir/t.txtpb" "$dir/keep" || fail "the table was changed"
  # A GEMM table cannot take collective measurements.
  cp "$src/tests/perftable/loo_golden.txtpb" "$dir/c.txtpb"
  "$tessera" perf-table gemm --batch=1 -b 16 -e 16 -o "$dir/c.txtpb" >/dev/null 2>"$dir/err"
  rc=$?
  [ $rc = 2 ] || fail "exit $rc for a GEMM sweep into a collective table, want 2"
  grep -q "holds a collective table: cannot merge GEMM measurements into it" "$dir/err" || fail "kind message"
  echo "ok: bad tables refused with exit 2"
  ;;
*)
  fail "unknown scenario $scenario"
  ;;
esac
