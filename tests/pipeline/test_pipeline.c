/* pipeline/ (ts_pipeline.h): the stage table's order and links, walking a
 * sharded module to the executable program one stage at a time, skipped
 * stages, and how bad input fails (which stage, which exit code). */
#include "ts_pipeline.h"
#include "ts_test.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BIT(s) (1u << (s))

static void test_table(void) {
  static const char *const names[] = {"parsed", "verified", "propagated", "partitioned", "scheduled", "assigned", "fused"};
  for (int s = 0; s < TS_STAGE_COUNT; s++) {
    ts_stage_t got;
    EXPECT(strcmp(ts_pipeline_stages[s].name, names[s]) == 0);
    EXPECT(ts_pipeline_stage_from_name(names[s], &got) && got == (ts_stage_t)s);
    EXPECT(ts_pipeline_stages[s].doc && ts_pipeline_stages[s].run);
  }
  ts_stage_t got;
  EXPECT(!ts_pipeline_stage_from_name("lowered", &got));
  /* propagated and partitioned both run on the verified module */
  EXPECT(ts_pipeline_stages[TS_STAGE_PROPAGATED].after == TS_STAGE_VERIFIED);
  EXPECT(ts_pipeline_stages[TS_STAGE_PARTITIONED].after == TS_STAGE_VERIFIED);
  EXPECT(ts_pipeline_stages[TS_STAGE_ASSIGNED].after == TS_STAGE_SCHEDULED);
  EXPECT(ts_pipeline_stages[TS_STAGE_FUSED].after == TS_STAGE_VERIFIED && ts_pipeline_stages[TS_STAGE_FUSED].prints);
  EXPECT(!ts_pipeline_stages[TS_STAGE_ASSIGNED].prints && ts_pipeline_stages[TS_STAGE_SCHEDULED].prints);
}

static void test_walk(const char *path) {
  ts_pipeline_t p;
  ts_diag_t diag = {0};
  ts_pipeline_init(&p, &(ts_pipeline_opts_t){.purpose = TS_PIPELINE_RUN, .path = path});
  EXPECT(ts_pipeline_run_to(&p, TS_STAGE_VERIFIED, &diag) == TS_OK);
  EXPECT(p.done == (BIT(TS_STAGE_PARSED) | BIT(TS_STAGE_VERIFIED)) && p.m && !p.pm);
  ts_partition_opts_default(&p.o.partition);
  p.o.partition.num_partitions = 4;
  p.o.program = (ts_rt_program_opts_t){.replica_count = 1, .num_partitions = 4};
  EXPECT(ts_pipeline_run_to(&p, TS_STAGE_PARTITIONED, &diag) == TS_OK);
  EXPECT(ts_pipeline_partitioned(&p) && p.pm->num_partitions == 4);
  EXPECT(!(p.done & BIT(TS_STAGE_PROPAGATED))); /* not on the way */
  ts_pipeline_skip(&p, TS_STAGE_SCHEDULED);
  EXPECT(ts_pipeline_run_to(&p, TS_STAGE_ASSIGNED, &diag) == TS_OK);
  EXPECT(p.prog && !p.sched && ts_rt_program_ninputs(p.prog) == p.pm->entry->nparams);
  if (diag.text) fprintf(stderr, "%s", diag.text);
  ts_diag_free(&diag);
  ts_pipeline_fini(&p);
  EXPECT(!p.m && !p.pm && !p.prog);

  /* A module that is already the per-device program: pm is m. */
  ts_pipeline_init(&p, &(ts_pipeline_opts_t){.purpose = TS_PIPELINE_PRINT, .path = path});
  EXPECT(ts_pipeline_run_to(&p, TS_STAGE_VERIFIED, &diag) == TS_OK);
  ts_pipeline_skip(&p, TS_STAGE_PARTITIONED);
  EXPECT(p.pm == p.m && !ts_pipeline_partitioned(&p));
  ts_pipeline_fini(&p);
}

static void test_bad_input(void) {
  char path[] = "/tmp/ts_pipeline_XXXXXX";
  int fd = mkstemp(path);
  const char *bad = "HloModule b\nENTRY e {\n  a = f32[2] parameter(0)\n  ROOT r = f32[3] add(a, a)\n}\n";
  EXPECT(fd >= 0 && write(fd, bad, strlen(bad)) == (ssize_t)strlen(bad));
  close(fd);
  ts_pipeline_t p;
  ts_diag_t diag = {0};
  ts_pipeline_init(&p, &(ts_pipeline_opts_t){.purpose = TS_PIPELINE_CHECK, .path = path});
  /* parsed does not verify; verified fails on the input: exit 2 */
  EXPECT(ts_pipeline_run_to(&p, TS_STAGE_PARSED, &diag) == TS_OK);
  ts_status_t st = ts_pipeline_run_to(&p, TS_STAGE_PARTITIONED, &diag);
  EXPECT(st == TS_ERR_VERIFY && ts_pipeline_exit_code(st) == 2);
  EXPECT(!(p.done & BIT(TS_STAGE_VERIFIED)) && !p.pm);
  EXPECT(diag.text && strstr(diag.text, "error:"));
  ts_diag_free(&diag);
  ts_pipeline_fini(&p);
  unlink(path);

  ts_pipeline_init(&p, &(ts_pipeline_opts_t){.purpose = TS_PIPELINE_PRINT, .path = "/nonexistent/m.hlo"});
  st = ts_pipeline_run_to(&p, TS_STAGE_VERIFIED, &diag);
  EXPECT(st != TS_OK && p.done == 0);
  ts_diag_free(&diag);
  ts_pipeline_fini(&p);
  EXPECT(ts_pipeline_exit_code(TS_OK) == 0 && ts_pipeline_exit_code(TS_ERR_CHECK_FAILED) == 1 &&
         ts_pipeline_exit_code(TS_ERR_UNSUPPORTED) == 3 && ts_pipeline_exit_code(TS_ERR_INTERNAL) == 4);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: test_pipeline MODULE.hlo (a module sharded for 4 devices)\n");
    return 2;
  }
  test_table();
  test_walk(argv[1]);
  test_bad_input();
  return failures != 0;
}
