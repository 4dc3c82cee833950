/* A partitioned module, scheduled, still computes what it computed:
 *   test_sched_check FILE NUM_PARTITIONS
 * partitions FILE, schedules a copy (async pairs, new order), prints and
 * re-parses it (the text is what the runtime reads), verifies it, runs both
 * per-device programs on N simulated devices with the same seeded inputs and
 * compares every device's outputs bit for bit. Every module chosen has at
 * least one collective: no async pair fails the test (it would prove nothing). (The partitioned program
 * itself is checked against the reference interpreter by the corpus.check /
 * partition tests; equality here carries that over to the schedule.)
 * Exits 77 when FILE is absent (../shared missing). */
#include "ts_hlo.h"
#include "ts_interp.h"
#include "ts_partitioner.h"
#include "ts_scheduler.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static ts_status_t parse_text(const char *name, const char *text, size_t len, int64_t np, ts_hlo_module_t **m,
                              ts_diag_t *d) {
  ts_source_t src = {name, text, len};
  TS_CHECK(ts_hlo_parse(&src, NULL, m, d));
  /* np devices in all: a header that sets replica_count leaves np / R partitions */
  int64_t rc = (*m)->replica_count > 1 ? (*m)->replica_count : 1;
  ts_hlo_verify_opts_t vo = {.num_partitions = np / rc > 1 ? np / rc : 1};
  return ts_hlo_verify(*m, &vo, d);
}

static ts_status_t run(const ts_hlo_module_t *m, int ndev, ts_value_t **outs, ts_diag_t *d) {
  ts_interp_opts_t io = {.ndevices = ndev};
  ts_interp_t *it = NULL;
  int np = m->entry->nparams;
  ts_value_t **args = ts_calloc((size_t)(np * ndev) + 1, sizeof *args);
  ts_status_t st = args ? ts_interp_create(m, &io, &it, d) : TS_ERR_NOMEM;
  for (int dev = 0; st == TS_OK && dev < ndev; dev++) st = ts_interp_random_args(m, 7 + (uint64_t)dev, &args[dev * np]);
  if (st == TS_OK) st = ts_interp_run(it, args, outs, d);
  for (int k = 0; args && k < np * ndev; k++) ts_value_unref(args[k]);
  ts_free(args);
  ts_interp_destroy(it);
  return st;
}

static int compare(ts_value_t *a, ts_value_t *b, int dev) {
  ts_array_t la[256], lb[256];
  int na = ts_value_leaves(a, la, 256), nb = ts_value_leaves(b, lb, 256);
  if (na != nb || na > 256) {
    fprintf(stderr, "device %d: %d outputs against %d\n", dev, nb, na);
    return 1;
  }
  for (int k = 0; k < na; k++)
    if (ts_array_bytes(&la[k]) != ts_array_bytes(&lb[k]) || memcmp(la[k].data, lb[k].data, ts_array_bytes(&la[k]))) {
      fprintf(stderr, "device %d: output %d differs\n", dev, k);
      return 1;
    }
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: test_sched_check FILE NUM_PARTITIONS\n");
    return 2;
  }
  if (access(argv[1], R_OK) != 0) {
    printf("skipped: %s not found\n", argv[1]);
    return 77;
  }
  int ndev = atoi(argv[2]);
  ts_diag_t d = {0};
  char *text = NULL;
  size_t len = 0;
  ts_hlo_module_t *m = NULL, *pm = NULL, *sync = NULL, *sched = NULL, *back = NULL;
  ts_buf_t pt = {0}, st_text = {0}, stats = {0};
  ts_sched_result_t *res = NULL;
  ts_value_t *want[64] = {0}, *got[64] = {0};
  int rc = 1;
  ts_status_t st;
  if (ndev < 2 || ndev > 64) goto done;
  TS_CHECK_GOTO(ts_read_file(argv[1], &text, &len, &d), st, fail);
  TS_CHECK_GOTO(parse_text(argv[1], text, len, ndev, &m, &d), st, fail);
  ts_partition_opts_t po;
  ts_partition_opts_default(&po);
  po.num_partitions = ndev;
  TS_CHECK_GOTO(ts_partition(m, &po, &pm, &d), st, fail);
  TS_CHECK_GOTO(ts_hlo_print(pm, &pt), st, fail);
  TS_CHECK_GOTO(parse_text("partitioned", pt.data, pt.len, ndev, &sync, &d), st, fail);
  TS_CHECK_GOTO(parse_text("partitioned", pt.data, pt.len, ndev, &sched, &d), st, fail);
  TS_CHECK_GOTO(ts_schedule(sched, NULL, &res, &d), st, fail);
  TS_CHECK_GOTO(ts_hlo_print(sched, &st_text), st, fail);
  TS_CHECK_GOTO(parse_text("scheduled", st_text.data, st_text.len, ndev, &back, &d), st, fail);
  ts_sched_result_print(res, &stats);
  fputs(stats.data ? stats.data : "", stdout);
  if (!strstr(st_text.data, "is_scheduled=true")) {
    fprintf(stderr, "the scheduled module has no is_scheduled=true\n");
    goto done;
  }
  TS_CHECK_GOTO(run(sync, ndev, want, &d), st, fail);
  TS_CHECK_GOTO(run(back, ndev, got, &d), st, fail);
  rc = 0;
  for (int dev = 0; dev < ndev; dev++) rc |= compare(want[dev], got[dev], dev);
  if (res->npairs == 0) {
    fprintf(stderr, "no async pair: the partitioned module has no collective to schedule\n");
    rc = 1;
  }
  printf("%s: %d devices, %d async pairs: %s\n", argv[1], ndev, res->npairs, rc ? "DIFFERENT" : "identical outputs");
  goto done;
fail:
  fprintf(stderr, "%s: %s\n%s", argv[1], ts_status_string(st), d.text ? d.text : "");
done:
  for (int k = 0; k < 64; k++) {
    ts_value_unref(want[k]);
    ts_value_unref(got[k]);
  }
  ts_interp_release_buffers();
  ts_sched_result_destroy(res);
  ts_buf_free(&pt);
  ts_buf_free(&st_text);
  ts_buf_free(&stats);
  ts_hlo_module_destroy(back);
  ts_hlo_module_destroy(sched);
  ts_hlo_module_destroy(sync);
  ts_hlo_module_destroy(pm);
  ts_hlo_module_destroy(m);
  ts_free(text);
  ts_diag_free(&d);
  return rc;
}
