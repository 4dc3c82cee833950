/* The roofline: what an op no table covers costs on a device, and the ring
 * model for collectives within a slice when no table covers them. */
#include "costmodel_internal.h"

#include <string.h>

/* Data-sheet figures (dense, no sparsity). H100 SXM5: 989.4 TFLOP/s bf16,
 * 494.7 TFLOP/s TF32, 66.9 TFLOP/s f32 vector, 3.35 TB/s HBM3, NVLink 4 at
 * 900 GB/s both ways (450 GB/s per direction). B200: 2.25 PFLOP/s bf16,
 * 1.1 PFLOP/s TF32, 75 TFLOP/s f32 vector, 8 TB/s HBM3e, NVLink 5 at
 * 1.8 TB/s both ways. The per-step and launch latencies are our assumption
 * (a few microseconds, the order NCCL's small-message times show).
 * host: measured once on the development machine (AMD EPYC, 2 cores):
 * the interpreter's f32 dot at 100 GFLOP/s on one core (bench_dot, 512^3,
 * the same with OPENBLAS_NUM_THREADS=1 and 2), memcpy at 18.5 GB/s with
 * every core copying (bench_elementwise): per core and per host, which
 * ts_roofline_share_host divides among the devices of a host; the in-process
 * collectives move data at memory speed, with tens of microseconds per
 * step of synchronisation. */
static const ts_roofline_t presets[] = {
    {"h100", 989.4e12, 494.7e12, 66.9e12, 3.35e12, 450e9, 2.0, 5.0},
    {"b200", 2.25e15, 1.1e15, 75e12, 8.0e12, 900e9, 2.0, 5.0},
    {"host", 100e9, 100e9, 5e9, 18.5e9, 9e9, 20.0, 20.0},
};

ts_status_t ts_roofline_preset(const char *name, ts_roofline_t *out) {
  for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++)
    if (strcmp(presets[i].name, name) == 0) {
      *out = presets[i];
      return TS_OK;
    }
  return TS_ERR_INVALID_ARGUMENT;
}

void ts_roofline_share_host(ts_roofline_t *r, double cores, int devices) {
  if (strcmp(r->name, "host") != 0 || devices < 1 || cores <= 0) return;
  double share = cores / devices;
  r->matmul_flops *= share;
  r->matmul_f32_flops *= share;
  r->vector_flops *= share;
  r->mem_bytes_per_sec /= devices;
}

double ts_roofline_time(const ts_roofline_t *r, double flops, double flops_per_sec, double bytes) {
  double tm = bytes > 0 ? bytes / r->mem_bytes_per_sec : 0;
  double tc = flops > 0 && flops_per_sec > 0 ? flops / flops_per_sec : 0;
  return tm > tc ? tm : tc;
}

double ts_roofline_collective_time(const ts_roofline_t *r, const ts_coll_query_t *q) {
  double n = (double)(q->devices > 1 ? q->devices : 1);
  double b = (double)(q->tensor_bytes > 0 ? q->tensor_bytes : 0);
  double bw = r->link_bytes_per_sec, step = r->link_latency_us * 1e-6;
  double t = r->coll_launch_us * 1e-6;
  if (n <= 1) return t;
  switch (q->kind) {
  case TS_COLL_ALL_REDUCE: return t + 2 * (n - 1) / n * b / bw + 2 * (n - 1) * step;
  case TS_COLL_COLLECTIVE_PERMUTE: return t + b / bw + step;
  default: return t + (n - 1) / n * b / bw + (n - 1) * step;
  }
}
