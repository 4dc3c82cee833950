#!/usr/bin/env bash
# Every GPU check, on a machine with one NVIDIA GPU (written for an H200,
# sm_90), in under 10 minutes; without a GPU (or in a build without CUDA)
# it says why and exits 77 (skipped). Builds only what it runs.
#   scripts/gpu-check.sh [BUILD_DIR]      (default: build)
# What it runs, each under its own timeout:
#   1. the device layer (tests/gpu/test_gpu_device: cuBLAS sgemm, every
#      fusion kind's PTX kernel against its CPU kernel, out of device memory)
#   2. the PTX tests (ptxas sm_90; they need no GPU) and --platform's errors
#   3. the examples with `tessera run --platform=gpu --check` (exit 3 today:
#      the GPU executor is not there yet; reported as NOT YET, not failed)
# Not yet here: the xla_spmd cases at --num-partitions 1, the MLP and
# transformer step times against their cuBLAS-only bound, and
# `tessera perf-table gemm --platform=gpu` (no GPU executor, no flag).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
build=${1:-build}
deadline=$((SECONDS + 570))
fail=0

[ -f "$build/CMakeCache.txt" ] || cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTESSERA_WERROR=ON
timeout 400 cmake --build "$build" -j"$(nproc)" --target tessera test_gpu_device test_codegen_ptx || { echo "gpu-check: FAIL: build"; exit 1; }
tessera=$build/launcher/tessera

# A GPU, the driver and a CUDA build, or a skip naming what is missing.
probe=$(timeout 60 "$tessera" run --platform=gpu --compile-only examples/mlp_sharded.hlo 2>&1 >/dev/null)
case $probe in
*"--platform=gpu: "*"no CUDA"*|*"this build has no CUDA"*) echo "gpu-check: SKIP: ${probe#*--platform=gpu: }"; exit 77 ;;
esac
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,compute_cap,memory.total,driver_version --format=csv,noheader

left() { echo $((deadline - SECONDS)); }

echo "== 1-2. device layer, PTX, --platform (ctest)"
ctest --test-dir "$build" --output-on-failure --timeout 120 -R '^(test_gpu_device|codegen\.ptx\.|cli\.(run|check)_platform)' -V |
  grep -E '^[0-9]+: |Test +#|tests passed' || true
ctest --test-dir "$build" --timeout 120 -R '^test_gpu_device$' >/dev/null 2>&1 || { echo "gpu-check: FAIL: test_gpu_device"; fail=1; }

echo "== 3. examples, tessera run --platform=gpu --check"
for ex in mlp_sharded mlp_train transformer_train; do
  [ "$(left)" -gt 60 ] || { echo "$ex: NOT RUN (time)"; continue; }
  out=$(timeout 120 "$tessera" run --platform=gpu --check examples/$ex.hlo 2>&1)
  rc=$?
  case $rc in
  0) echo "$ex: $(echo "$out" | grep '^check:' | tail -1)" ;;
  3) echo "$ex: NOT YET: $(echo "$out" | tail -1)" ;;
  *) echo "$ex: FAIL (exit $rc)"; echo "$out" | tail -5; fail=1 ;;
  esac
done
echo "gpu-check: $([ $fail = 0 ] && echo ok || echo FAILED) in ${SECONDS}s"
exit $fail
