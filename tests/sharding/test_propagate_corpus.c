/* Corpus test of sharding propagation: every module in ../shared/corpus
 * (real_hlo, real_hlo_large, xla_spmd) verifies, propagates, ends with a
 * sharding on every instruction and still verifies. Prints, per module with
 * user annotations, how many instructions were annotated, propagated from
 * a neighbour, or defaulted. Usage: test_propagate_corpus CORPUS_DIR;
 * exits 77 (skip) without it. */
#include "corpus_walk.h"
#include "ts_sharding.h"

#include "ts_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int files, sharded;

static void check_file(const char *path, const char *base) {
  char *text = NULL;
  size_t len = 0;
  ts_diag_t d = {0};
  ts_hlo_module_t *m = NULL;
  ts_sharding_propagate_stats_t st = {0};
  ts_sharding_propagate_opts_t opts = {.stats = &st};
  /* A headerless fragment with a collective: its group size comes from
   * --replica-count 8 in the round-trip test too. */
  ts_hlo_verify_opts_t vopts = {0};
  if (!strcmp(base, "tensorflow__tensorflow__u4_all_gather_1x8.hlo")) vopts.replica_count = 8;
  files++;
  if (ts_read_file(path, &text, &len, &d) != TS_OK ||
      ts_hlo_parse(&(ts_source_t){path, text, len}, NULL, &m, &d) != TS_OK || ts_hlo_verify(m, &vopts, &d) != TS_OK) {
    fprintf(stderr, "FAIL: %s does not parse and verify\n%s", base, d.text ? d.text : "");
    failures++;
    goto done;
  }
  if (ts_sharding_propagate(m, &opts, &d) != TS_OK) {
    fprintf(stderr, "FAIL: %s: propagation failed\n%s", base, d.text ? d.text : "");
    failures++;
    goto done;
  }
  int missing = 0, total = 0;
  for (int c = 0; c < m->ncomps; c++)
    for (int k = 0; k < m->comps[c]->ninstrs; k++, total++)
      if (!m->comps[c]->instrs[k]->sharding) {
        if (!missing++) fprintf(stderr, "FAIL: %s: %s has no sharding\n", base, m->comps[c]->instrs[k]->name);
      }
  if (missing) failures++;
  EXPECT_EQ(st.annotated + st.propagated + st.defaulted, total);
  EXPECT(st.converged);
  if (ts_hlo_verify(m, &vopts, &d) != TS_OK) {
    fprintf(stderr, "FAIL: %s does not verify after propagation\n%s", base, d.text ? d.text : "");
    failures++;
  }
  if (st.annotated) {
    sharded++;
    printf("%-60s %6d instrs %5d annotated %6d propagated %6d defaulted %3d rounds\n", base, total, st.annotated,
           st.propagated, st.defaulted, st.rounds);
  }
done:
  ts_hlo_module_destroy(m);
  ts_free(text);
  ts_diag_free(&d);
}

static void check_one(const char *path, const char *base, void *ctx) {
  (void)ctx;
  check_file(path, base);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: test_propagate_corpus CORPUS_DIR\n");
    return 2;
  }
  if (ts_corpus_walk(argv[1], check_one, NULL) < 0) {
    printf("skipped: %s not found\n", argv[1]);
    return 77;
  }
  printf("%d files, %d with user shardings\n", files, sharded);
  /* The three directories hold 63 modules; a floor keeps a silently empty
   * walk from passing. */
  EXPECT(files >= 60);
  if (failures) fprintf(stderr, "%d failure(s)\n", failures);
  return failures ? 1 : 0;
}
