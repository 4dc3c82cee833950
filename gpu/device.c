/* CUDA devices: the count this process sees and the reason when there is
 * none. The driver is looked for first (dlopen libcuda.so.1, what the CUDA
 * runtime itself opens) so that a machine without it is told so: the
 * runtime alone reports cudaErrorInsufficientDriver, which reads as a
 * version problem. */
#include "ts_gpu.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#ifdef TS_GPU_HAVE_CUDA
#include <cuda_runtime.h>
#include <dlfcn.h>
#endif

static pthread_once_t probe_once = PTHREAD_ONCE_INIT;
static int probe_n;
static char probe_why[512];

#ifdef TS_GPU_HAVE_CUDA
static void probe(void) {
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *e = dlerror();
    snprintf(probe_why, sizeof probe_why, "no CUDA driver on this machine (%s)", e ? e : "libcuda.so.1 not found");
    return;
  }
  dlclose(h); /* the runtime holds its own reference from its first call */
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n <= 0) {
    const char *vis = getenv("CUDA_VISIBLE_DEVICES");
    char visible[128] = "";
    if (vis) snprintf(visible, sizeof visible, "; CUDA_VISIBLE_DEVICES='%.64s'", vis);
    if (e != cudaSuccess)
      snprintf(probe_why, sizeof probe_why, "no CUDA device (cudaGetDeviceCount: %s: %s%s)", cudaGetErrorName(e),
               cudaGetErrorString(e), visible);
    else
      snprintf(probe_why, sizeof probe_why, "no CUDA device (cudaGetDeviceCount found none%s)", visible);
    return;
  }
  probe_n = n;
}

bool ts_gpu_built(void) { return true; }
#else
static void probe(void) {
  snprintf(probe_why, sizeof probe_why,
           "this build has no CUDA (built with CUDA turned off, or without the CUDA toolkit and NCCL)");
}

bool ts_gpu_built(void) { return false; }
#endif

ts_status_t ts_gpu_device_count(int *n, ts_diag_t *diag) {
  pthread_once(&probe_once, probe);
  *n = probe_n;
  if (probe_n > 0) return TS_OK;
  ts_diag_plain(diag, "%s", probe_why);
  return TS_ERR_UNSUPPORTED;
}

int ts_gpu_device_for(int local_rank, int ndev) {
  if (ndev <= 0) return -1;
  return (local_rank < 0 ? 0 : local_rank) % ndev;
}

bool ts_gpu_default(void) { return false; }
