#!/bin/sh
# `tessera opt --stage=scheduled` and `--fit-scurve` from the command line.
#   check_sched_cli.sh MODE TESSERA ARG
# MODE stage   ARG = a sharded module for 4 devices: scheduled module on
#              stdout (is_scheduled=true, async pairs), statistics in --stats,
#              a Chrome trace that is JSON, the same bytes on a second run
# MODE errors  ARG = the same module: bad scheduler flags exit 2, naming them
# MODE fit     ARG = the test_scurve_fit program (it writes the table)
# MODE maxtext ARG = the MaxText module (exit 77 when absent): schedules for
#              8 devices under the H100 preset; prints the figures
# MODE peak    ARG = a module (exit 77 when absent), DEVICES = its devices,
#              PRESET = a cost-model preset (optional): the per-device peak
#              of buffer assignment (tessera run --compile-only) scheduled
#              under the default memory target is not above program
#              order's (--no-schedule)
set -u
mode=$1 tessera=$2 arg=$3 devices=${4:-} preset=${5:-}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

case $mode in
stage)
  "$tessera" opt --stage=scheduled --num-partitions 4 --stats "$dir/stats" --trace "$dir/trace.json" "$arg" \
    >"$dir/out1" 2>"$dir/err" || fail "exit $? $(cat "$dir/err")"
  head -1 "$dir/out1" | grep -q 'is_scheduled=true' || fail "no is_scheduled=true in the header"
  grep -q -- '-start(' "$dir/out1" || fail "no async start in the module"
  grep -q '^predicted step time: ' "$dir/stats" || fail "no predicted step time in --stats"
  [ -s "$dir/err" ] && fail "statistics went to stderr despite --stats: $(cat "$dir/err")"
  python3 -c 'import json,sys; t=json.load(open(sys.argv[1])); assert any(e.get("ph")=="X" for e in t["traceEvents"])' \
    "$dir/trace.json" || fail "the trace is not a Chrome trace"
  "$tessera" opt --stage=scheduled --num-partitions 4 "$arg" >"$dir/out2" 2>"$dir/stats2" || fail "second run: exit $?"
  cmp -s "$dir/out1" "$dir/out2" || fail "two runs printed different modules"
  grep -q '^predicted step time: ' "$dir/stats2" || fail "no statistics on stderr"
  "$tessera" opt --stage=verified --num-partitions 4 "$dir/out1" >/dev/null || fail "the scheduled module does not verify"
  cat "$dir/stats"
  ;;
errors)
  want() { # WANT_TEXT ARGS...: exit 2, WANT_TEXT on stderr, nothing on stdout
    text=$1
    shift
    "$tessera" opt "$@" >"$dir/o" 2>"$dir/e"
    rc=$?
    [ "$rc" = 2 ] || fail "$*: exit $rc, want 2"
    grep -qF -- "$text" "$dir/e" || fail "$*: stderr lacks '$text': $(cat "$dir/e")"
    [ -s "$dir/o" ] && fail "$*: wrote to stdout"
    return 0
  }
  want "--overlap-limit wants" --stage=scheduled --num-partitions 4 --overlap-limit=0 "$arg"
  want "--overlap-limit wants" --stage=scheduled --num-partitions 4 --overlap-limit=all-gather=x "$arg"
  want "--memory-limit wants" --stage=scheduled --num-partitions 4 --memory-limit=lots "$arg"
  want "unknown kind" --stage=scheduled --num-partitions 4 --cost-model=magic "$arg"
  want "not one of h100, b200, host" --stage=scheduled --num-partitions 4 --cost-model-preset=tpu "$arg"
  want "unknown key 'speed'" --stage=scheduled --num-partitions 4 --cost-model=analytical:speed=3 "$arg"
  want "need --stage=scheduled" --stage=partitioned --num-partitions 4 --stats "$dir/s" "$arg"
  [ -e "$dir/s" ] && fail "--stats file written on a usage error"
  echo "ok"
  ;;
fit)
  "$arg" "$dir/table.pbtxt" >/dev/null || fail "test_scurve_fit failed"
  "$tessera" opt --fit-scurve "$dir/table.pbtxt" >"$dir/o" 2>"$dir/e" || fail "exit $? $(cat "$dir/e")"
  cat "$dir/o" "$dir/e"
  grep -q 'nic_speed_gbps=25,' "$dir/o" || fail "nic speed not recovered"
  grep -q 'nccl_op_launch_us=45,chunk_prep_us=6,rtt_us=31' "$dir/o" || fail "latencies not recovered"
  # the printed knobs are a valid --cost-model option string
  "$tessera" opt --fit-scurve "$dir/missing.pbtxt" >/dev/null 2>&1 && fail "a missing table did not fail"
  echo "ok"
  ;;
maxtext)
  [ -f "$arg" ] || { echo "skipped: $arg not found"; exit 77; }
  /usr/bin/time -f "wall %e s, max rss %M KiB" "$tessera" opt --stage=scheduled --num-partitions 8 \
    --cost-model-preset=h100 --stats "$dir/stats" --trace "$dir/trace.json" "$arg" >"$dir/out" 2>"$dir/err" \
    || fail "exit $? $(cat "$dir/err")"
  cat "$dir/err" "$dir/stats"
  head -1 "$dir/out" | grep -q 'is_scheduled=true' || fail "no is_scheduled=true"
  grep -q 'all-reduce-start' "$dir/out" || fail "no async all-reduce"
  step=$(sed -n 's/^predicted step time: \([0-9.]*\) us$/\1/p' "$dir/stats")
  [ -n "$step" ] || fail "no predicted step time"
  awk -v s="$step" 'BEGIN { exit !(s > 0) }' || fail "step time $step"
  ;;
peak)
  [ -f "$arg" ] || { echo "skipped: $arg not found"; exit 77; }
  # peak_bytes FLAGS...: the printed peak ("peak 27.45 GiB") in bytes
  peak_bytes() {
    "$tessera" run --compile-only --devices "$devices" ${preset:+--cost-model-preset="$preset"} "$@" "$arg" \
      >"$dir/o" 2>&1 || fail "exit $? $(cat "$dir/o")"
    awk '/per-device memory/ { for (i = 1; i <= NF; i++) if ($i == "peak") { v = $(i + 1); u = $(i + 2); break }
           m = u == "B" ? 1 : u == "KiB" ? 1024 : u == "MiB" ? 1048576 : u == "GiB" ? 1073741824 : u == "TiB" ? 1099511627776 : -1
           if (m < 0) exit 1; printf "%.0f\n", v * m; found = 1 }
         END { if (!found) exit 1 }' "$dir/o" || fail "no peak in: $(cat "$dir/o")"
  }
  po=$(peak_bytes --no-schedule) || exit 1
  sched=$(peak_bytes) || exit 1
  grep '^schedule' "$dir/o"
  echo "peak: program order $po B, scheduled $sched B"
  [ "$sched" -le "$po" ] || fail "scheduled peak $sched B above program order's $po B"
  ;;
*) echo "unknown mode $mode"; exit 2 ;;
esac
