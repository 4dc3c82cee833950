#!/bin/sh
# tessera run and OpenBLAS's core type, end to end on one machine whatever
# its CPU:
#   check_blas.sh TESSERA MODULE SCENARIO
# chosen:   the info line names the kernels that run; when cpuid calls for a
#           core type, that one runs (or OpenBLAS's own pick, when it knew
#           the CPU and picked as wide); --check still matches.
# fallback: the start-up check is told the chosen kernels are wrong
#           (TESSERA_BLAS_CHECK_PERTURB): one warning, the next safer core
#           type runs, --check matches.
# all_wrong: every core type is "wrong": the chain of re-executions ends
#           (one warning per step, at most four), the run completes and
#           matches.
# user:     the user's OPENBLAS_CORETYPE runs, even when the check fails
#           on it (a warning, no fallback).
set -u
bin=$1 module=$2 scenario=$3
unset OPENBLAS_CORETYPE TESSERA_BLAS_CORETYPE TESSERA_BLAS_CHECK_PERTURB
err=$(mktemp) out=$(mktemp)
trap 'rm -f "$err" "$out"' EXIT
fail=0
die() { echo "FAIL: $*"; echo "--- stderr"; cat "$err"; echo "--- stdout"; cat "$out"; exit 1; }

# run [VAR=VALUE...]: tessera run --devices 4 --check with info logging.
run() {
  env TESSERA_LOG=info "$@" "$bin" run --devices 4 --check "$module" >"$out" 2>"$err" </dev/null
  rc=$?
  [ "$rc" = 0 ] || die "tessera run exited $rc"
  grep -q '^check: match' "$out" || die "no 'check: match'"
}
# The last "runs its X kernels" line's X.
running() { sed -n 's/.*blas: OpenBLAS runs its \([A-Za-z0-9]*\) kernels.*/\1/p' "$err" | tail -1; }
# What cpuid calls for, from the same line ("none" when nothing).
cpuid() { sed -n 's/.*cpuid calls for \([A-Za-z0-9]*\)).*/\1/p' "$err" | tail -1; }
warnings() { grep -c 'compute sgemm wrong at start-up' "$err"; }

run
first=$(running) detected=$(cpuid)
[ -n "$first" ] || die "no info line naming the kernels"
[ -n "$detected" ] || die "no info line naming cpuid's choice"
[ "$(grep -c 'blas: OpenBLAS runs its' "$err")" = 1 ] || die "the info line is not there exactly once"
case $scenario in
chosen)
  [ "$(warnings)" = 0 ] || die "the check failed on the chosen kernels"
  # cpuid's choice runs, unless OpenBLAS knew the CPU and picked as wide.
  if grep -q "runs its $first kernels (chosen by tessera" "$err"; then
    [ "$first" = "$detected" ] || die "cpuid calls for $detected but $first runs"
  else
    grep -q "runs its $first kernels (OpenBLAS's own detection;" "$err" || die "neither tessera's choice nor OpenBLAS's own"
    case $detected/$first in
    SkylakeX/Prescott | SkylakeX/Sandybridge | SkylakeX/Haswell | Haswell/Prescott | Haswell/Sandybridge | Sandybridge/Prescott)
      die "OpenBLAS's own $first is narrower than cpuid's $detected, yet kept" ;;
    esac
  fi
  ;;
fallback)
  run TESSERA_BLAS_CHECK_PERTURB="$first"
  [ "$(warnings)" = 1 ] || die "want one warning, got $(warnings)"
  now=$(running)
  case $first in
  SkylakeX | Cooperlake | SapphireRapids) [ "$now" = Haswell ] || die "after $first want Haswell, got $now" ;;
  Haswell | Zen) [ "$now" = Sandybridge ] || die "after $first want Sandybridge, got $now" ;;
  *) grep -q 'no safer core type is left' "$err" || die "no 'no safer core type' warning" ;;
  esac
  ;;
all_wrong)
  # OpenBLAS's own choice, the end of the chain, is wrong too.
  env TESSERA_LOG=info TESSERA_BLAS_CORETYPE=none "$bin" run --devices 4 "$module" >"$out" 2>"$err" </dev/null
  own=$(running)
  [ -n "$own" ] || die "no info line with TESSERA_BLAS_CORETYPE=none"
  run TESSERA_BLAS_CHECK_PERTURB="SkylakeX,Haswell,Sandybridge,$own"
  n=$(warnings)
  [ "$n" -ge 1 ] && [ "$n" -le 4 ] || die "want 1 to 4 warnings, got $n"
  grep -q 'no safer core type is left' "$err" || die "the chain did not end at OpenBLAS's own"
  [ "$(running)" = "$own" ] || die "want OpenBLAS's own $own at the end, got $(running)"
  ;;
user)
  run OPENBLAS_CORETYPE=Prescott TESSERA_BLAS_CHECK_PERTURB=Prescott
  [ "$(running)" = Prescott ] || die "OPENBLAS_CORETYPE=Prescott but $(running) runs"
  grep -q 'OPENBLAS_CORETYPE from the environment' "$err" || die "not marked as the user's"
  grep -q 'keeping them as OPENBLAS_CORETYPE asks' "$err" || die "no warning that the user's kernels failed"
  [ "$(warnings)" = 1 ] || die "want one warning, got $(warnings)"
  ;;
*) die "unknown scenario $scenario" ;;
esac
echo "ok: $scenario ($(running) runs; cpuid calls for $detected)"
exit $fail
