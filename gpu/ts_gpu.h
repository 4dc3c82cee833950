/* Tessera gpu: CUDA devices for `tessera run --platform=gpu`: whether this
 * build has CUDA, how many devices this process sees, which one a rank
 * uses. Built with and without CUDA (TS_GPU_HAVE_CUDA): without, every
 * query says so. The CUDA runtime (libcudart) is linked; it opens the
 * driver (libcuda.so.1) itself on its first call, so a CUDA build starts
 * and runs on the CPU on a machine without the driver. */
#ifndef TS_GPU_H
#define TS_GPU_H

#include "ts_common.h"

typedef enum {
  TS_PLATFORM_DEFAULT, /* no --platform: gpu when ts_gpu_default() says so, else cpu */
  TS_PLATFORM_CPU,
  TS_PLATFORM_GPU,
} ts_platform_t;

/* Whether this build has the CUDA parts (CMake found the toolkit and NCCL). */
bool ts_gpu_built(void);

/* The CUDA devices this process sees (CUDA_VISIBLE_DEVICES applied: the CUDA
 * runtime does that). TS_ERR_UNSUPPORTED with the reason in diag, naming
 * what is missing: no CUDA in this build, no driver on this machine
 * (libcuda.so.1), or no device (cudaGetDeviceCount failed or found none).
 * *n is 0 then. Thread-safe; the answer is found once per process. */
ts_status_t ts_gpu_device_count(int *n, ts_diag_t *diag);

/* The device the `local_rank`-th device of this host uses: one GPU per
 * rank, local_rank modulo the devices this process sees (ndev > 0). */
int ts_gpu_device_for(int local_rank, int ndev);

/* Whether a run without --platform goes to the GPU: the build has CUDA and
 * a device is present and the GPU executor runs whole modules. Until it
 * does (it has not yet run on a GPU), false: the default stays cpu. */
bool ts_gpu_default(void);

/* ---- one device (cuda.c) -----------------------------------------------------
 * What a GPU executor runs on: one arena of device memory (the buffers of
 * buffer assignment at their offsets), one stream, a cuBLAS handle, PTX
 * modules loaded through the driver API (libcuda.so.1 opened with dlopen:
 * cuModuleLoadData, cuModuleGetFunction, cuLaunchKernel). Everything is
 * ordered on the stream; ts_gpu_sync waits for it (the step boundary).
 * Without CUDA every call returns TS_ERR_UNSUPPORTED. Not thread-safe: one
 * thread drives one device. NEVER RUN ON A GPU YET (see tests/gpu). */
typedef struct ts_gpu ts_gpu_t;
typedef struct ts_gpu_module ts_gpu_module_t;

/* Opens `device` (cudaSetDevice on the calling thread) with an arena of
 * arena_bytes. Out of device memory is TS_ERR_UNSUPPORTED (exit 3) naming
 * the arena, its size and the device's free memory. */
ts_status_t ts_gpu_open(int device, size_t arena_bytes, ts_gpu_t **out, ts_diag_t *diag);
void ts_gpu_close(ts_gpu_t *g); /* NULL is a no-op; unloads its modules */
/* The device address of arena byte `offset`. */
void *ts_gpu_at(const ts_gpu_t *g, size_t offset);

/* Host <-> device copies, ordered on the stream; the host memory must stay
 * as it is until ts_gpu_sync. */
ts_status_t ts_gpu_copy_in(ts_gpu_t *g, void *dev, const void *host, size_t bytes, ts_diag_t *diag);
ts_status_t ts_gpu_copy_out(ts_gpu_t *g, void *host, const void *dev, size_t bytes, ts_diag_t *diag);
/* Waits for everything queued on the stream. */
ts_status_t ts_gpu_sync(ts_gpu_t *g, ts_diag_t *diag);

/* C[m,n] = A[m,k] . B[k,n], row-major f32 on the device (cublasSgemm on
 * the transposed problem: column-major C^T = B^T . A^T). */
ts_status_t ts_gpu_sgemm(ts_gpu_t *g, int64_t m, int64_t n, int64_t k, const float *a, const float *b, float *c,
                         ts_diag_t *diag);

/* Loads PTX text (the driver compiles it for the device). */
ts_status_t ts_gpu_load_ptx(ts_gpu_t *g, const char *ptx, ts_gpu_module_t **out, ts_diag_t *diag);
/* Launches `kernel` of module `mod` (a codegen/ PTX kernel: nptrs device
 * pointers, then the element count n) over enough blocks for n elements. */
ts_status_t ts_gpu_launch(ts_gpu_t *g, ts_gpu_module_t *mod, const char *kernel, void *const *ptrs, int nptrs,
                          int64_t n, ts_diag_t *diag);

#endif
