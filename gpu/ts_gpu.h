/* Tessera gpu: CUDA devices for `tessera run --platform=gpu`: whether this
 * build has CUDA, how many devices this process sees, which one a rank
 * uses. Built with and without CUDA (TESSERA_HAVE_CUDA): without, every
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

/* Whether this build has the CUDA parts (TESSERA_CUDA found the toolkit). */
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

#endif
