/* pt_dump TABLE: loads a performance table through the cost model's reader
 * (text or binary) and prints one canonical line per entry, for the
 * perf-table tests to compare with the sweep they asked for:
 *   collectives: KIND SCHEME DEVICES_PER_GROUP NUM_GROUPS TYPE TENSOR_BYTES
 *   GEMMs:       DTYPE B M N K
 * It fails (exit 1) on an implausible value: a throughput outside
 * [1 KB/s, 10 TB/s] or FLOP/s outside [100 KFLOP/s, 10 PFLOP/s], a collective
 * without a fingerprint, or two entries of one device with one fingerprint. */
#include "ts_costmodel.h"

#include <stdio.h>
#include <string.h>

/* Prints what went wrong (the diagnostic, or `what`); returns 1. */
static int failed(ts_diag_t *diag, const char *what) {
  fprintf(stderr, "%s", diag->text ? diag->text : what);
  ts_diag_free(diag);
  return 1;
}

static int dump_coll(const ts_perf_table_t *t, const char *dev) {
  ts_diag_t diag = {0};
  ts_coll_measurement_t *ms;
  size_t n;
  if (ts_perf_table_collectives(t, dev, &ms, &n, &diag) < 0) return failed(&diag, "cannot read the entries\n");
  int rc = 0;
  for (size_t i = 0; i < n; i++) {
    const ts_coll_measurement_t *m = &ms[i];
    printf("%s %s %lld %lld %s %lld\n", ts_coll_kind_name(m->kind), ts_transfer_scheme_name(m->scheme),
           (long long)m->devices_per_group, (long long)m->num_groups, ts_primitive_type_name(m->element_type),
           (long long)m->tensor_bytes);
    if (m->throughput_bytes_per_sec < 1000 || m->throughput_bytes_per_sec > 10000000000000LL) {
      fprintf(stderr, "pt_dump: entry %zu: implausible throughput %lld B/s\n", i,
              (long long)m->throughput_bytes_per_sec);
      rc = 1;
    }
    if (!m->fingerprint || strlen(m->fingerprint) != 32) {
      fprintf(stderr, "pt_dump: entry %zu: no 32-digit fingerprint\n", i);
      rc = 1;
      continue;
    }
    for (size_t j = 0; j < i; j++)
      if (ms[j].fingerprint && strcmp(ms[j].fingerprint, m->fingerprint) == 0) {
        fprintf(stderr, "pt_dump: entries %zu and %zu share fingerprint %s\n", j, i, m->fingerprint);
        rc = 1;
      }
  }
  ts_free(ms);
  return rc;
}

static int dump_gemm(const ts_perf_table_t *t, const char *dev) {
  ts_diag_t diag = {0};
  ts_gemm_measurement_t *ms;
  size_t n;
  if (ts_perf_table_gemms(t, dev, &ms, &n, &diag) < 0) return failed(&diag, "cannot read the entries\n");
  int rc = 0;
  for (size_t i = 0; i < n; i++) {
    const ts_gemm_measurement_t *m = &ms[i];
    printf("%s %lld %lld %lld %lld\n", m->dtype, (long long)m->b, (long long)m->m, (long long)m->n, (long long)m->k);
    if (m->flops < 100000 || m->flops > 10000000000000000LL) {
      fprintf(stderr, "pt_dump: entry %zu: implausible %lld FLOP/s\n", i, (long long)m->flops);
      rc = 1;
    }
  }
  ts_free(ms);
  return rc;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: pt_dump TABLE\n");
    return 2;
  }
  ts_diag_t diag = {0};
  ts_perf_table_t *t = NULL;
  if (ts_perf_table_load(argv[1], &t, &diag) < 0) return failed(&diag, "cannot load the table\n");
  int rc = 0;
  for (size_t d = 0; d < ts_perf_table_num_devices(t) && rc == 0; d++) {
    const char *dev = ts_perf_table_device(t, d);
    rc = ts_perf_table_kind(t) == TS_PERF_TABLE_GEMM ? dump_gemm(t, dev) : dump_coll(t, dev);
  }
  ts_perf_table_destroy(t);
  return rc;
}
