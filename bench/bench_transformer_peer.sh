#!/bin/sh
# The transformer step of issue 16 (examples/gen_transformer_train.py --batch 16
# --seq 128 --dim 256 --heads 8 --mlp 1024 --classes 64 --data 2 --model 1) on
# 2 ranks: `tessera run` vs PyTorch's DistributedDataParallel step over gloo on
# the same model (bench/bench_ddp_torch.py), alternating ROUNDS times in one run.
# First both train 3 steps from the same weights on the same batches and print
# their losses (at 64 classes and, where labels have no ties, 16); then each
# round prints both medians and torch/tessera, and the last line the medians'.
#   bench/bench_transformer_peer.sh [BUILD_DIR] [STEPS]
# Environment: MODE=mpi (default: tessera's ranks as processes under
# scripts/mpirun.sh, as DDP's are) or threads (tessera run --devices 2);
# ROUNDS (default 3); PYTHON (default /usr/bin/python3, the one with Debian's
# python3-torch); PEER_CORETYPE (the peer's OPENBLAS_CORETYPE; default the
# kernels tessera runs, empty: OpenBLAS's own pick).
# Exits 77 (skipped) when PYTHON cannot import torch: a benchmark peer only.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-$here/../build}" && pwd)
steps=${2:-20}
mode=${MODE:-mpi}
rounds=${ROUNDS:-3}
py=${PYTHON:-/usr/bin/python3}
tessera=$build/launcher/tessera
peer=$here/bench_ddp_torch.py
ranks=2
sizes="--batch 16 --seq 128 --in 16 --dim 256 --heads 8 --mlp 1024 --classes 64"

case $mode in
  mpi | threads) ;;
  *) echo "bench_transformer_peer: MODE=$mode: want mpi or threads" >&2; exit 2 ;;
esac
if ! "$py" -c 'import torch.distributed' 2>/dev/null; then
  echo "bench_transformer_peer: skipped: $py cannot import torch; the PyTorch peer needs" \
       "Debian's python3-torch (apt-get install python3-torch), a benchmark peer only," \
       "never a dependency of tessera" >&2
  exit 77
fi
[ -x "$tessera" ] || { echo "bench_transformer_peer: $tessera: not built" >&2; exit 2; }

tmp=$(mktemp -d)
job=
# Each job runs in a session of its own (setsid), so that the trap ends all of
# it: mpirun's ranks, torch's spawned ranks.
cleanup() {
  if [ -n "$job" ]; then
    kill -TERM "-$job" 2>/dev/null || : # dash's kill takes no --
    wait "$job" 2>/dev/null || :
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# run OUT CMD...: CMD with stdout and stderr into OUT; its status is run's.
run() {
  out=$1
  shift
  setsid "$@" >"$out" 2>&1 &
  job=$!
  rc=0
  wait "$job" || rc=$?
  job=
  [ "$rc" = 0 ] || { echo "bench_transformer_peer: failed ($rc): $*" >&2; cat "$out" >&2; }
  return "$rc"
}

# tessera_run OUT ARGS...: `tessera run ARGS` on the job's ranks.
tessera_run() {
  tout=$1
  shift
  if [ "$mode" = mpi ]; then
    run "$tout" sh "$here/../scripts/mpirun.sh" -np "$ranks" "$tessera" run "$@"
  else
    run "$tout" "$tessera" run --devices "$ranks" "$@"
  fi
}

# ---- the same computation: 3 steps of both from the same weights on the same
# batches. At 64 classes the teacher's columns repeat (it has period 17 in the
# class), so every token's label is a tie of 3 or 4 classes in exact arithmetic
# that each gemm's rounding breaks its own way: the losses differ a little.
# At 16 classes (distinct columns) they agree to float rounding.
peer_env=
# check TAG SIZES...: the losses into $tmp/TAG_t.log (tessera), $tmp/TAG_p.log.
check() {
  tag=$1
  shift
  python3 "$here/../examples/gen_transformer_train.py" "$@" --data "$ranks" --model 1 -o "$tmp/$tag.hlo"
  run "$tmp/w.log" "$py" "$peer" "$@" --ranks "$ranks" --print-loss 3 --write-inputs "$tmp/$tag.in"
  TESSERA_LOG=info tessera_run "$tmp/${tag}_t.log" --steps 3 --loop --inputs "$tmp/$tag.in" "$tmp/$tag.hlo"
  if [ -z "$peer_env" ]; then
    # The peer runs the OpenBLAS kernels tessera runs (as bench_mlp.sh's does).
    core=$(sed -n 's/.*OpenBLAS runs its \([A-Za-z0-9]*\) kernels.*/\1/p' "$tmp/${tag}_t.log" | head -n 1)
    peer_core=${PEER_CORETYPE-$core}
    peer_env="env -u OPENBLAS_CORETYPE"
    [ -z "$peer_core" ] || peer_env="env OPENBLAS_CORETYPE=$peer_core"
  fi
  # shellcheck disable=SC2086 # peer_env: word-split on purpose
  run "$tmp/${tag}_p.log" $peer_env "$py" "$peer" "$@" --ranks "$ranks" --print-loss 3 \
    --inputs "$tmp/$tag.in" --warmup 0 --steps 3
}
sizes16=$(echo "$sizes" | sed 's/--classes 64/--classes 16/')
# shellcheck disable=SC2086 # sizes: word-split on purpose
check c64 $sizes
# shellcheck disable=SC2086
check c16 $sizes16
# The weights' element count from the module: the parameters an output
# aliases (input_output_alias), shapes from entry_computation_layout.
hlo_params=$(python3 - "$tmp/c64.hlo" <<'EOF'
import re, sys
head = open(sys.argv[1]).readline()
aliased = {int(p) for p in re.findall(r": \((\d+), \{\}", head)}
layout = head.split("entry_computation_layout={(", 1)[1].split(")->", 1)[0]
shapes = re.findall(r"f32\[([0-9,]*)\]", layout)
n = 0
for i, dims in enumerate(shapes):
    if i in aliased:
        c = 1
        for d in filter(None, dims.split(",")):
            c *= int(d)
        n += c
print(n)
EOF
)

torch_params=$(sed -n 's/.* params \([0-9]*\) .*/\1/p' "$tmp/c64_p.log")
torch_info=$(sed -n 's/^torch_ddp \(torch .*\)/\1/p' "$tmp/c64_p.log")

echo "transformer step: $sizes, $ranks ranks data parallel (8 sequences per rank), f32, SGD lr 0.25"
peer_kernels="OPENBLAS_CORETYPE $peer_core"
[ -n "$peer_core" ] || peer_kernels="OpenBLAS's own kernel pick"
echo "tessera: $mode mode, OpenBLAS ${core:-?} kernels; peer: $torch_info, $peer_kernels"
echo "weights: tessera $hlo_params (the module's aliased parameters), torch $torch_params"
echo "loss from the same weights and batches:"
printf '  %-8s %-5s %-14s %-14s\n' classes step tessera torch
for tag in c64 c16; do
  for s in 1 2 3; do
    lt=$(awk -v s="$s" '$1 == "step" && $2 == s { print $6 }' "$tmp/${tag}_t.log")
    lp=$(awk -v s="$s" '$1 == "step" && $2 == s { print $6 }' "$tmp/${tag}_p.log")
    printf '  %-8s %-5s %-14s %-14s\n' "${tag#c}" "$s" "$lt" "$lp"
  done
done

# ---- timing: tessera's median over steps 2..STEPS+1, the peer's over STEPS
# steps after 2 warmup steps; random batches (each its own generator).
printf '%-6s %14s %14s %14s\n' round tessera_ms torch_ddp_ms torch/tessera
ts=
ps=
r=1
while [ "$r" -le "$rounds" ]; do
  tessera_run "$tmp/t.log" --steps $((steps + 1)) --loop "$tmp/c64.hlo"
  t=$(awk '/^steps / { for (i = 1; i < NF; i++) if ($i == "time_ms") { sub(";", "", $(i + 1)); print $(i + 1) } }' "$tmp/t.log")
  # shellcheck disable=SC2086
  run "$tmp/p.log" $peer_env "$py" "$peer" $sizes --ranks "$ranks" --print-loss 0 --warmup 2 --steps "$steps"
  p=$(awk '$1 == "torch_ddp" && $2 == "median_step_ms" { print $3 }' "$tmp/p.log")
  printf '%-6s %14s %14s %14s\n' "$r" "$t" "$p" "$(awk -v a="$p" -v b="$t" 'BEGIN { printf "%.2f", a / b }')"
  ts="$ts $t"
  ps="$ps $p"
  r=$((r + 1))
done
median() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# shellcheck disable=SC2086 # the lists: word-split on purpose
mt=$(median $ts)
# shellcheck disable=SC2086
mp=$(median $ps)
printf '%-6s %14s %14s %14s\n' median "$mt" "$mp" "$(awk -v a="$mp" -v b="$mt" 'BEGIN { printf "%.2f", a / b }')"
