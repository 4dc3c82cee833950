/* One CUDA device: the arena, the stream, cuBLAS, and PTX modules through
 * the driver API. The runtime API (libcudart, linked) owns the device and
 * its primary context; the few driver calls (module load, launch) come from
 * libcuda.so.1 opened here with dlopen, because linking -lcuda would stop a
 * CUDA build from starting on machines without the driver. This file has
 * never run on a GPU (no GPU where it was written); tests/gpu is its check. */
#include "ts_gpu.h"

#ifdef TS_GPU_HAVE_CUDA
#include <cublas_v2.h>
#include <cuda.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define MAX_MODULES 64

/* ---- the driver API, opened once ------------------------------------------ */

static struct {
  CUresult (*module_load_data)(CUmodule *, const void *);
  CUresult (*module_get_function)(CUfunction *, CUmodule, const char *);
  CUresult (*module_unload)(CUmodule);
  CUresult (*launch_kernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                            CUstream, void **, void **);
  CUresult (*get_error_string)(CUresult, const char **);
} drv;
static pthread_once_t drv_once = PTHREAD_ONCE_INIT;
static char drv_error[256];

static void drv_open(void) {
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *e = dlerror();
    snprintf(drv_error, sizeof drv_error, "no CUDA driver on this machine (%s)", e ? e : "libcuda.so.1 not found");
    return;
  }
  /* The plain names are the entry points of these five (no _v2 forms). */
  *(void **)&drv.module_load_data = dlsym(h, "cuModuleLoadData");
  *(void **)&drv.module_get_function = dlsym(h, "cuModuleGetFunction");
  *(void **)&drv.module_unload = dlsym(h, "cuModuleUnload");
  *(void **)&drv.launch_kernel = dlsym(h, "cuLaunchKernel");
  *(void **)&drv.get_error_string = dlsym(h, "cuGetErrorString");
  if (!drv.module_load_data || !drv.module_get_function || !drv.module_unload || !drv.launch_kernel ||
      !drv.get_error_string) {
    snprintf(drv_error, sizeof drv_error, "libcuda.so.1 lacks the driver API entry points");
    drv.module_load_data = NULL;
  }
}

static const char *cu_error(CUresult r) {
  const char *s = NULL;
  if (drv.get_error_string) drv.get_error_string(r, &s);
  return s ? s : "unknown CUDA driver error";
}

/* ---- the device ----------------------------------------------------------- */

struct ts_gpu_module {
  CUmodule mod;
  int nfn;
  char names[16][48]; /* a small cache of looked-up kernels */
  CUfunction fn[16];
};

struct ts_gpu {
  int device;
  cudaStream_t stream;
  cublasHandle_t blas;
  char *arena;
  size_t arena_bytes;
  int nmods;
  ts_gpu_module_t mods[MAX_MODULES];
};

static ts_status_t rt_fail(ts_diag_t *diag, const char *what, cudaError_t e) {
  ts_diag_plain(diag, "%s: %s: %s", what, cudaGetErrorName(e), cudaGetErrorString(e));
  return TS_ERR_SYSTEM;
}

ts_status_t ts_gpu_open(int device, size_t arena_bytes, ts_gpu_t **out, ts_diag_t *diag) {
  *out = NULL;
  pthread_once(&drv_once, drv_open);
  if (!drv.module_load_data) {
    ts_diag_plain(diag, "%s", drv_error);
    return TS_ERR_UNSUPPORTED;
  }
  ts_gpu_t *g = ts_calloc(1, sizeof *g);
  if (!g) return TS_ERR_NOMEM;
  g->device = device;
  cudaError_t e;
  ts_status_t st;
  if ((e = cudaSetDevice(device)) != cudaSuccess || (e = cudaFree(NULL)) != cudaSuccess) { /* the primary context, current */
    st = rt_fail(diag, "cannot open the CUDA device", e);
    goto fail;
  }
  if ((e = cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking)) != cudaSuccess) {
    st = rt_fail(diag, "cudaStreamCreate", e);
    goto fail;
  }
  if (arena_bytes && (e = cudaMalloc((void **)&g->arena, arena_bytes)) != cudaSuccess) {
    size_t free_b = 0, total = 0;
    cudaGetLastError(); /* the failed allocation's error, not to be reported by the next call */
    cudaMemGetInfo(&free_b, &total);
    ts_diag_plain(diag, "out of device memory: the buffer arena needs %zu bytes on CUDA device %d (%zu of %zu free)",
                  arena_bytes, device, free_b, total);
    st = TS_ERR_UNSUPPORTED;
    goto fail;
  }
  g->arena_bytes = arena_bytes;
  if (cublasCreate(&g->blas) != CUBLAS_STATUS_SUCCESS || cublasSetStream(g->blas, g->stream) != CUBLAS_STATUS_SUCCESS) {
    ts_diag_plain(diag, "cuBLAS did not start on CUDA device %d", device);
    st = TS_ERR_SYSTEM;
    goto fail;
  }
  *out = g;
  return TS_OK;
fail:
  ts_gpu_close(g);
  return st;
}

void ts_gpu_close(ts_gpu_t *g) {
  if (!g) return;
  if (g->stream) cudaStreamSynchronize(g->stream);
  for (int k = 0; k < g->nmods; k++) drv.module_unload(g->mods[k].mod);
  if (g->blas) cublasDestroy(g->blas);
  if (g->arena) cudaFree(g->arena);
  if (g->stream) cudaStreamDestroy(g->stream);
  ts_free(g);
}

void *ts_gpu_at(const ts_gpu_t *g, size_t offset) { return g->arena + offset; }

ts_status_t ts_gpu_copy_in(ts_gpu_t *g, void *dev, const void *host, size_t bytes, ts_diag_t *diag) {
  cudaError_t e = cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, g->stream);
  return e == cudaSuccess ? TS_OK : rt_fail(diag, "host-to-device copy", e);
}

ts_status_t ts_gpu_copy_out(ts_gpu_t *g, void *host, const void *dev, size_t bytes, ts_diag_t *diag) {
  cudaError_t e = cudaMemcpyAsync(host, dev, bytes, cudaMemcpyDeviceToHost, g->stream);
  return e == cudaSuccess ? TS_OK : rt_fail(diag, "device-to-host copy", e);
}

ts_status_t ts_gpu_sync(ts_gpu_t *g, ts_diag_t *diag) {
  cudaError_t e = cudaStreamSynchronize(g->stream);
  return e == cudaSuccess ? TS_OK : rt_fail(diag, "the device's stream", e);
}

ts_status_t ts_gpu_sgemm(ts_gpu_t *g, int64_t m, int64_t n, int64_t k, const float *a, const float *b, float *c,
                         ts_diag_t *diag) {
  if (m > INT32_MAX || n > INT32_MAX || k > INT32_MAX) {
    ts_diag_plain(diag, "sgemm %lldx%lldx%lld: a dimension past cuBLAS's int", (long long)m, (long long)n, (long long)k);
    return TS_ERR_UNSUPPORTED;
  }
  const float one = 1.0f, zero = 0.0f;
  /* Row-major C = A.B is column-major C^T = B^T.A^T: B as the (n x k) left
   * operand with leading dimension n, A as (k x m) with k, C^T with n. */
  cublasStatus_t s = cublasSgemm(g->blas, CUBLAS_OP_N, CUBLAS_OP_N, (int)n, (int)m, (int)k, &one, b, (int)n, a,
                                 (int)k, &zero, c, (int)n);
  if (s != CUBLAS_STATUS_SUCCESS) {
    ts_diag_plain(diag, "cublasSgemm %lldx%lldx%lld: %s", (long long)m, (long long)n, (long long)k,
                  cublasGetStatusString(s));
    return TS_ERR_SYSTEM;
  }
  return TS_OK;
}

ts_status_t ts_gpu_load_ptx(ts_gpu_t *g, const char *ptx, ts_gpu_module_t **out, ts_diag_t *diag) {
  *out = NULL;
  if (g->nmods == MAX_MODULES) {
    ts_diag_plain(diag, "more than %d PTX modules on one device", MAX_MODULES);
    return TS_ERR_INTERNAL;
  }
  ts_gpu_module_t *gm = &g->mods[g->nmods];
  memset(gm, 0, sizeof *gm);
  CUresult r = drv.module_load_data(&gm->mod, ptx);
  if (r != CUDA_SUCCESS) {
    ts_diag_plain(diag, "cuModuleLoadData: the driver rejected the generated PTX: %s", cu_error(r));
    return TS_ERR_INTERNAL;
  }
  g->nmods++;
  *out = gm;
  return TS_OK;
}

ts_status_t ts_gpu_launch(ts_gpu_t *g, ts_gpu_module_t *mod, const char *kernel, void *const *ptrs, int nptrs,
                          int64_t n, ts_diag_t *diag) {
  if (n <= 0) return TS_OK;
  CUfunction fn = NULL;
  for (int k = 0; k < mod->nfn && !fn; k++)
    if (strcmp(mod->names[k], kernel) == 0) fn = mod->fn[k];
  if (!fn) {
    CUresult r = drv.module_get_function(&fn, mod->mod, kernel);
    if (r != CUDA_SUCCESS) {
      ts_diag_plain(diag, "cuModuleGetFunction %s: %s", kernel, cu_error(r));
      return TS_ERR_INTERNAL;
    }
    if (mod->nfn < 16) {
      snprintf(mod->names[mod->nfn], sizeof mod->names[0], "%s", kernel);
      mod->fn[mod->nfn++] = fn;
    }
  }
  /* kernelParams: a pointer to each argument's value. */
  void *vals[258];
  if (nptrs > 256) return TS_ERR_INVALID_ARGUMENT;
  for (int p = 0; p < nptrs; p++) vals[p] = (void *)&ptrs[p];
  vals[nptrs] = &n;
  /* 256 threads a block; a grid of at most 65535 blocks, the grid-stride
   * loop covering the rest. */
  int64_t blocks = (n + 255) / 256;
  if (blocks > 65535) blocks = 65535;
  CUresult r = drv.launch_kernel(fn, (unsigned)blocks, 1, 1, 256, 1, 1, 0, (CUstream)g->stream, vals, NULL);
  if (r != CUDA_SUCCESS) {
    ts_diag_plain(diag, "cuLaunchKernel %s (%lld elements): %s", kernel, (long long)n, cu_error(r));
    return TS_ERR_SYSTEM;
  }
  return TS_OK;
}

#else /* no CUDA in this build */

static ts_status_t none(ts_diag_t *diag) {
  ts_diag_plain(diag, "this build has no CUDA");
  return TS_ERR_UNSUPPORTED;
}
ts_status_t ts_gpu_open(int device, size_t arena_bytes, ts_gpu_t **out, ts_diag_t *diag) {
  *out = NULL;
  return none(diag);
}
void ts_gpu_close(ts_gpu_t *g) { (void)g; }
void *ts_gpu_at(const ts_gpu_t *g, size_t offset) { return NULL; }
ts_status_t ts_gpu_copy_in(ts_gpu_t *g, void *dev, const void *host, size_t bytes, ts_diag_t *diag) { return none(diag); }
ts_status_t ts_gpu_copy_out(ts_gpu_t *g, void *host, const void *dev, size_t bytes, ts_diag_t *diag) { return none(diag); }
ts_status_t ts_gpu_sync(ts_gpu_t *g, ts_diag_t *diag) { return none(diag); }
ts_status_t ts_gpu_sgemm(ts_gpu_t *g, int64_t m, int64_t n, int64_t k, const float *a, const float *b, float *c,
                         ts_diag_t *diag) {
  return none(diag);
}
ts_status_t ts_gpu_load_ptx(ts_gpu_t *g, const char *ptx, ts_gpu_module_t **out, ts_diag_t *diag) {
  *out = NULL;
  return none(diag);
}
ts_status_t ts_gpu_launch(ts_gpu_t *g, ts_gpu_module_t *mod, const char *kernel, void *const *ptrs, int nptrs,
                          int64_t n, ts_diag_t *diag) {
  return none(diag);
}
#endif
