#!/bin/sh
# Latency hiding on an emulated 2-slice mesh (issue 8's measured figures):
# the layered data-parallel training step of bench/gen_overlap.py on DEVICES
# devices as SLICES slices, with the runtime's cross-slice delay knob
# (TESSERA_CROSS_SLICE_DELAY_US, runtime/ts_runtime.h) standing in for a slow
# link between slices. For each delay it measures the median step time in
# program order (--no-schedule: synchronous collectives pay the delay in
# full) and with the latency-hiding schedule (made with a cost model that
# describes the emulated link, and with the default host model that does
# not), and prints
#   sched/po   scheduled / program order              (issue 8's target <= 0.70)
#   sched/max  scheduled / max(compute, communication) (target <= 1.10)
#   pred err   the scheduler's predicted step (--compile-only) vs measured
# compute = program order with no delay, less its collective waits (kernels
# + runtime overhead); communication = program order's collective waits at
# that delay (what the collectives take with nothing to hide behind).
# Delays: COMM_FRACTIONS of the compute time spread over the step's crossing
# collectives (comm/compute = 0.67 is the most the backward can hide, 1.0
# the issue's "communication ~ compute"), or DELAY_US explicitly.
#
#   bench/bench_overlap.sh [BUILD_DIR] [RESULTS_FILE]
#
# Environment: LAYERS (8), WIDTH (512), BATCH (1024), DEVICES (4), SLICES
# (2), STEPS (10 per run; the first is not timed), REPEAT (5: each repeat
# runs every configuration once, back to back, so its ratios compare runs
# made under the same load; medians over repeats), COMM_FRACTIONS ("0.67
# 1.0"), DELAY_US (a list; wins over COMM_FRACTIONS), BW_GBPS (adds the
# knob's bandwidth term), MODE (threads: --devices N in one process; mpi:
# mpirun -np N; cluster: across tests/cluster hosts, see
# bench/bench_multihost_overlap.sh), COST_MODEL (the link's model, instead of
# the one solved from the delay), HOST_MODEL (1: also run the schedule of the default host
# cost model; 0: skip it), OVERLAP (the scheduler's --overlap-limit, e.g.
# all-reduce=4: how many all-reduces may be in flight at once; default 1),
# MEMORY_LIMIT (the scheduler's --memory-limit; default: none given, so the
# schedule never rises above program order's peak, which keeps a gradient's
# all-reduce from overlapping much compute; 1T lets it overlap freely).
# A benchmark, never a test: the figures depend on the machine's load.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../build}
results=${2:-}
tessera=$build/launcher/tessera
layers=${LAYERS:-8} width=${WIDTH:-512} batch=${BATCH:-1024}
devices=${DEVICES:-4} slices=${SLICES:-2} steps=${STEPS:-10} repeat=${REPEAT:-5}
fractions=${COMM_FRACTIONS:-0.67 1.0} delays=${DELAY_US:-} bw=${BW_GBPS:-} mode=${MODE:-threads}
overlap=${OVERLAP:-1}
[ -x "$tessera" ] || { echo "bench_overlap.sh: no $tessera (build the tessera target)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
module=$tmp/step.hlo
python3 "$here/gen_overlap.py" --layers "$layers" --width "$width" --batch "$batch" --data "$devices" --no-loss \
  -o "$module"

# The job: N threads, or N ranks under mpirun (the knob travels with -x;
# set, empty, where a call has no delay, so that mpirun finds it).
TESSERA_CROSS_SLICE_DELAY_US=
export TESSERA_CROSS_SLICE_DELAY_US
job() {
  if [ "$mode" = cluster ]; then
    # bench/bench_multihost_overlap.sh: ranks on the hosts of tests/cluster's CLUSTER, PER_HOST each
    "$CLUSTER_SH" mpirun "$CLUSTER" "$PER_HOST" -np "$devices" "$tessera" run --slices "$slices" "$@"
  elif [ "$mode" = mpi ]; then
    root=
    [ "$(id -u)" = 0 ] && root=--allow-run-as-root
    mpirun $root --oversubscribe --bind-to none -x TESSERA_CROSS_SLICE_DELAY_US -np "$devices" \
      "$tessera" run --slices "$slices" "$@"
  else
    "$tessera" run --devices "$devices" --slices "$slices" "$@"
  fi
}

# run DELAY FLAGS...: one run of STEPS steps; prints "median_ms kernels% collectives% overhead%".
run() {
  d=$1
  shift
  TESSERA_CROSS_SLICE_DELAY_US=$d job --steps "$steps" --loop "$@" "$module" 2>&1 | awk '
    /^steps / { for (i = 1; i <= NF; i++) { v = $(i + 1); gsub(/[;,%]/, "", v)
                  if ($i == "time_ms") ms = v; if ($i == "kernels") k = v
                  if ($i == "collectives") c = v; if ($i == "overhead") o = v }
                print ms, k, c, o; found = 1 }
    END { if (!found) exit 1 }' || { echo "bench_overlap.sh: tessera run failed (delay $d, flags $*)" >&2; exit 1; }
}

# compute FLAGS...: the step with no delay, as run: on the cluster the link
# itself has one, so for this run it has none and no rate limit (the relay's
# hop stays), then gets LINK_DELAY_US / LINK_RATE_MBIT back. Without this,
# "compute" on the cluster was program order over the slow link.
compute() {
  [ "$mode" = cluster ] || { run 0 "$@"; return; }
  "$CLUSTER_SH" link "$CLUSTER" 0 0 0 0 >/dev/null
  run 0 "$@"
  "$CLUSTER_SH" link "$CLUSTER" 0 0 "${LINK_DELAY_US:?}" "${LINK_RATE_MBIT:?}" >/dev/null
}

median() { sort -g | awk '{ a[NR] = $1 } END { if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

# The S-curve options that price the emulated link for the scheduler: for
# an all-reduce over D devices in S slices the S-curve model charges
# 2 (D-1) S / D steps of (rtt + chunk prep + transfer), plus a launch; the
# knob charges L once (plus the slice's share over BW). Solve for rtt (and
# the NIC speed), with launch and prep at their 1 us floor.
link_model() {
  [ -z "${COST_MODEL:-}" ] || { echo "$COST_MODEL"; return; }
  awk -v L="$1" -v D="$devices" -v S="$slices" -v bw="$bw" 'BEGIN {
    f = 2 * (D - 1) * S / D; rtt = int((L - 1) / f - 1 + 0.5); if (rtt < 1) rtt = 1
    nic = bw == "" ? 100000 : f * 1.025 * (D / S) * bw / D
    printf "analytical:gpus_per_node=%d,nccl_op_launch_us=1,chunk_prep_us=1,rtt_us=%d,nic_speed_gbps=%g", D / S, rtt, nic }'
}

# predict COST_MODEL: the scheduler's "predicted step" and its program-order
# time (compute + every collective), in ms.
predict() {
  job --compile-only --overlap-limit "$overlap" ${MEMORY_LIMIT:+--memory-limit "$MEMORY_LIMIT"} --cost-model "$1" "$module" | awk '
    /^schedule/ { for (i = 1; i <= NF; i++) { v = $(i + 1)
                    if ($i == "step") step = v; if ($i == "collectives" && coll == "") coll = v; if ($i == "which") exp_ = v }
                  print step, step - exp_ + coll }'
}

ncoll=$(job --compile-only "$module" | awk '$1 == "total" { print $2 }')
cpu=$(sed -n 's/^model name[^:]*: *//p' /proc/cpuinfo | head -1)
say() { printf '%s\n' "$*" | tee -a "$tmp/out"; }
col() { awk -v c="$1" '{ print $c }'; } # column c of each line
ratio_med() { awk "{ print $1 }" "$2" | median; } # median over repeats of an awk expression

say "# bench_overlap.sh $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores ($cpu), load $(cut -d' ' -f1-3 /proc/loadavg)"
say "# workload: bench/gen_overlap.py --layers $layers --width $width --batch $batch --data $devices --no-loss:"
say "#   $ncoll all-reduces across slices per step; $devices devices as $slices slices ($mode), $steps steps a run;"
say "#   per repeat one run of each configuration back to back; figures are medians over $repeat repeats"
say "#   scheduled with --overlap-limit $overlap"

# The delays: COMM_FRACTIONS of the compute time (3 runs with no delay) over the crossing collectives.
if [ -z "$delays" ]; then
  : > "$tmp/cal"
  for r in 1 2 3; do compute --no-schedule >> "$tmp/cal"; done
  cal=$(col 1 < "$tmp/cal" | median)
  say "# calibration: program order with no delay, median step $cal ms"
  for f in $fractions; do
    delays="$delays $(awk -v f="$f" -v c="$cal" -v n="$ncoll" 'BEGIN { printf "%d", f * c * 1000 / n }')"
  done
fi

# A GEMM table fitted to measured kernel time: one FLOP/s (the step's dot
# FLOPs over its kernel time at no delay) at every dot shape of the module,
# under the host's device key, so the scheduler prices compute as measured
# here (contention included) instead of by the host roofline.
fit_table() {
  bd=$((batch / devices))
  awk -v kern_ms="$1" -v L="$layers" -v H="$width" -v Bd="$bd" -v key="host:$cpu" 'BEGIN {
    flops = (3 * L - 1) * 2 * Bd * H * H; rate = flops / (kern_ms / 1000)
    print "# proto-file: xla/xla_data.proto"; print "# proto-message: xla.GemmPerfTable"
    printf "entries {\n  key: \"%s\"\n  value {\n", key
    split(Bd " " H, ms, " "); split(Bd " " H, ks, " ")
    for (i = 1; i <= 2; i++) for (j = 1; j <= 2; j++)
      printf "    entries {\n      b: 1\n      m: %d\n      n: %d\n      k: %d\n      flops { key: \"f32xf32->f32\" value: %.0f }\n    }\n", ms[i], H, ks[j], rate
    print "  }\n}" }'
}

printf '%9s %6s %8s %8s %8s %8s %8s %8s %8s %8s %8s %7s %8s %7s\n' delay_us comm/c comp_ms po_ms sched_ms comm_ms \
  sched/po sched/max host_ms host/po pred_ms err% fit_ms err% | tee -a "$tmp/out"
for d in $delays; do
  spec=$d${bw:+,$bw}
  cm=$(link_model "$d")
  : > "$tmp/rows"
  for r in $(seq "$repeat"); do
    c0=$(compute --no-schedule)
    po=$(run "$spec" --no-schedule)
    sc=$(run "$spec" --overlap-limit "$overlap" ${MEMORY_LIMIT:+--memory-limit "$MEMORY_LIMIT"} --cost-model "$cm")
    h="0 0 0 0"
    [ "${HOST_MODEL:-1}" = 0 ] || h=$(run "$spec" --overlap-limit "$overlap" ${MEMORY_LIMIT:+--memory-limit "$MEMORY_LIMIT"})
    # compute: the step with no delay; comm: program order's collective waits at this delay
    echo "$c0 $po $sc $h" | awk '{ print $1, $1 * ($2 + $4) / 100, $5, $5 * $7 / 100, $9, $13 }' >> "$tmp/rows"
  done
  # rows: compute kernels+overhead po comm sched host
  comp=$(col 1 < "$tmp/rows" | median) kern=$(col 2 < "$tmp/rows" | median)
  po=$(col 3 < "$tmp/rows" | median) comm=$(col 4 < "$tmp/rows" | median)
  s=$(col 5 < "$tmp/rows" | median) h=$(col 6 < "$tmp/rows" | median)
  cc=$(ratio_med '$4 / $1' "$tmp/rows") spo=$(ratio_med '$5 / $3' "$tmp/rows")
  smax=$(ratio_med '$5 / ($4 > $1 ? $4 : $1)' "$tmp/rows") hpo=$(ratio_med '$6 / $3' "$tmp/rows")
  fit_table "$kern" > "$tmp/gemm.txtpb"
  set -- $(predict "$cm") $(predict "table:$tmp/gemm.txtpb;$cm")
  awk -v d="$spec" -v cc="$cc" -v comp="$comp" -v po="$po" -v s="$s" -v comm="$comm" -v spo="$spo" -v smax="$smax" \
      -v h="$h" -v hpo="$hpo" -v p="$1" -v f="$3" 'BEGIN {
    printf "%9s %6.2f %8.1f %8.1f %8.1f %8.1f %8.2f %9.2f %8.1f %8.2f %8.1f %+7.1f %8.1f %+7.1f\n",
      d, cc, comp, po, s, comm, spo, smax, h, hpo, p, 100 * (p - s) / s, f, 100 * (f - s) / s }' | tee -a "$tmp/out"
  awk -v po="$po" -v p="$2" -v f="$4" 'BEGIN {
    printf "#   program order predicted (compute + collectives): %.1f ms (err %+.1f%%), fitted %.1f ms (err %+.1f%%)\n",
      p, 100 * (p - po) / po, f, 100 * (f - po) / po }' | tee -a "$tmp/out"
  say "#   link model: --cost-model '$cm'"
done
say ""
say "# comp: program order with no delay (kernels, runtime overhead, in-machine collectives; cluster: the link"
say "# at no delay and no rate limit); po: --no-schedule;"
say "# sched: scheduled with the link's cost model; comm: program order's collective waits at the delay;"
say "# sched/po, sched/max (= sched / max(comp, comm)), comm/c: medians of per-repeat ratios; host: scheduled"
say "# with the default host model (collectives priced as within one machine); pred: --compile-only's predicted"
say "# step with the link model and the host roofline; fit: with the GEMM table fitted to the measured kernel time."
[ -z "$results" ] || { mkdir -p "$(dirname "$results")"; cat "$tmp/out" >> "$results"; }
