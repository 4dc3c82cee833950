#!/bin/sh
# --platform=gpu where it cannot run: one line on stderr naming what is
# missing, nothing on stdout, exit 2. CUDA_VISIBLE_DEVICES="" hides every
# device from the CUDA runtime, so a machine with a GPU answers "no CUDA
# device" (the runtime respects the variable), one without the driver "no
# CUDA driver", a build without CUDA "this build has no CUDA".
#   check_platform.sh TESSERA HAVE_CUDA(ON|OFF) CMD MODULE.hlo [ARGS...]
set -u
tessera=$1 have_cuda=$2 cmd=$3
shift 3
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
CUDA_VISIBLE_DEVICES= timeout 60 "$tessera" "$cmd" --platform=gpu "$@" >"$out" 2>"$err" </dev/null
rc=$?
fail=0
[ "$rc" = 2 ] || { echo "FAIL: exit code $rc, want 2"; fail=1; }
[ -s "$out" ] && { echo "FAIL: wrote to stdout:"; head -3 "$out"; fail=1; }
[ "$(wc -l <"$err")" = 1 ] || { echo "FAIL: want one line on stderr, got:"; head -5 "$err"; fail=1; }
line=$(head -n 1 "$err")
prefix="tessera $cmd: error: --platform=gpu: "
case $have_cuda in
ON)
  case $line in
  "${prefix}no CUDA driver on this machine (libcuda.so.1"*) ;;
  "${prefix}no CUDA device (cudaGetDeviceCount: cudaErrorNoDevice"*"CUDA_VISIBLE_DEVICES=''"*) ;;
  *) echo "FAIL: not the no-driver nor the no-device error: $line"; fail=1 ;;
  esac ;;
*)
  [ "$line" = "${prefix}this build has no CUDA (built with CUDA turned off, or without the CUDA toolkit and NCCL)" ] ||
    { echo "FAIL: not the no-CUDA-build error: $line"; fail=1; } ;;
esac
[ $fail = 0 ] && echo "ok: $line"
exit $fail
