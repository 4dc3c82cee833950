/* Corpus test of sharding/: every `sharding=` in ../shared/corpus builds a
 * value on its instruction's shape whose canonical text re-reads to an
 * equal value (and prints the same again), and the real Shardy dump's
 * xla.sdy.* shardings equal its classic `sharding={devices=[8,1,1]<=[8]}`.
 * Usage: test_sharding_corpus CORPUS_DIR; exits 77 (skip) without it. */
#include "corpus_walk.h"
#include "ts_sharding.h"

#include "ts_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static ts_arena_t *A;
static int checked, named;

static char *print_value(const ts_sharding_value_t *v) {
  ts_buf_t b = {0};
  ts_sharding_value_print(&b, v);
  return b.data; /* caller frees */
}

static void check_instr(const char *file, const ts_hlo_instr_t *i) {
  ts_sharding_value_t *v = NULL, *w = NULL;
  ts_status_t st = ts_sharding_from_syntax(A, i->sharding, i->shape, &v);
  if (st == TS_ERR_UNSUPPORTED && i->sharding->kind == TS_SHARD_NAMED) {
    named++;
    return;
  }
  if (st != TS_OK) {
    fprintf(stderr, "FAIL: %s: %s: sharding does not build (%s)\n", file, i->name, ts_status_string(st));
    failures++;
    return;
  }
  char *c1 = print_value(v), *c2 = NULL;
  ts_diag_t d = {0};
  st = ts_sharding_parse(A, c1, i->shape, &w, &d);
  if (st != TS_OK || !ts_sharding_equal(v, w)) {
    fprintf(stderr, "FAIL: %s: %s: canonical %s re-reads %s\n%s", file, i->name, c1,
            st == TS_OK ? "to a different value" : ts_status_string(st), d.text ? d.text : "");
    failures++;
  } else if (strcmp(c1, c2 = print_value(w)) != 0) {
    fprintf(stderr, "FAIL: %s: %s: canonical text is not a fixed point: %s then %s\n", file, i->name, c1, c2);
    failures++;
  }
  checked++;
  ts_diag_free(&d);
  free(c1);
  free(c2);
}

static const char *string_attr(const ts_hlo_instr_t *i, const char *name) {
  const ts_hlo_attr_t *a = ts_hlo_instr_attr(i, name);
  return a && (a->kind == TS_ATTR_STRING || a->kind == TS_ATTR_BLOB || a->kind == TS_ATTR_RAW) ? a->v.s : NULL;
}

static const char *frontend(const ts_hlo_instr_t *i, const char *key) {
  const char *blob = string_attr(i, "frontend_attributes"), *v = NULL;
  if (blob) EXPECT_EQ(ts_sharding_frontend_attr(A, blob, key, &v), TS_OK);
  return v;
}

/* The shard_map dump: parameters, the GlobalToLocalShape operands, the
 * LocalToGlobalShape result and the FuncResultSharding marker are all
 * split 8 ways on dim 0 of a one-axis mesh of 8. */
static void check_shardy(const ts_hlo_module_t *m) {
  ts_sdy_meshes_t *ms = NULL;
  EXPECT(ts_sharding_sdy_module_meshes(A, m, &ms) == TS_OK && ms && ms->n == 1);
  if (!ms || ms->n != 1) return;
  EXPECT(!strcmp(ms->meshes[0].name, "mesh") && ms->meshes[0].naxes == 1 && ms->meshes[0].ndevices == 8);
  int64_t dims[] = {8, 256, 2048};
  ts_shape_t shape = {.elem = TS_F32, .rank = 3, .dims = dims};
  ts_sharding_value_t *classic = NULL;
  EXPECT_EQ(ts_sharding_parse(A, "{devices=[8,1,1]<=[8]}", &shape, &classic, NULL), TS_OK);
  int seen = 0;
  for (int c = 0; c < m->ncomps; c++)
    for (int k = 0; k < m->comps[c]->ninstrs; k++) {
      const ts_hlo_instr_t *i = m->comps[c]->instrs[k];
      const char *target = string_attr(i, "custom_call_target");
      const char *in = frontend(i, "xla.sdy.in_shardings"), *out = frontend(i, "xla.sdy.out_shardings");
      const char *one = frontend(i, "xla.sdy.sharding");
      ts_sharding_value_t *v = NULL;
      if (in) {
        EXPECT(target && !strcmp(target, "xla.sdy.GlobalToLocalShape"));
        const ts_shape_t *shapes[2] = {i->nops > 0 ? i->ops[0]->shape : NULL, i->nops > 1 ? i->ops[1]->shape : NULL};
        EXPECT(i->nops == 2 && ts_sharding_from_sdy(A, ms, in, 2, shapes, &v) == TS_OK);
        EXPECT(v && v->kind == TS_SHARD_TUPLE && v->ntuple == 2);
        for (int e = 0; v && e < v->ntuple; e++) {
          EXPECT(ts_sharding_equal(v->tuple[e], classic));
          ts_sharding_value_t *op = NULL; /* the operand's own classic sharding */
          EXPECT(i->ops[e]->sharding &&
                 ts_sharding_from_syntax(A, i->ops[e]->sharding, i->ops[e]->shape, &op) == TS_OK);
          EXPECT(ts_sharding_equal(v->tuple[e], op));
          seen++;
        }
      }
      if (out) {
        EXPECT(target && !strcmp(target, "xla.sdy.LocalToGlobalShape"));
        EXPECT_EQ(ts_sharding_from_sdy(A, ms, out, 1, &i->shape, &v), TS_OK);
        EXPECT(v && v->kind == TS_SHARD_TUPLE && v->ntuple == 1 && ts_sharding_equal(v->tuple[0], classic));
        seen++;
      }
      if (one) {
        EXPECT_EQ(ts_sharding_from_sdy(A, ms, one, 1, &i->shape, &v), TS_OK);
        if (v && v->kind == TS_SHARD_TUPLE) v = v->ntuple == 1 ? v->tuple[0] : NULL;
        EXPECT(ts_sharding_equal(v, classic));
        if (i->sharding) {
          ts_sharding_value_t *own = NULL;
          EXPECT(ts_sharding_from_syntax(A, i->sharding, i->shape, &own) == TS_OK && ts_sharding_equal(v, own));
        }
        seen++;
      }
    }
  /* 2 parameters, 2 in_shardings, 1 out_shardings, 1 FuncResultSharding */
  EXPECT_EQ(seen, 6);
}

static void check_file(const char *path, const char *base) {
  char *text = NULL;
  size_t len = 0;
  ts_diag_t d = {0};
  ts_hlo_module_t *m = NULL;
  if (ts_read_file(path, &text, &len, &d) != TS_OK || ts_hlo_parse(&(ts_source_t){path, text, len}, NULL, &m, &d)) {
    fprintf(stderr, "FAIL: %s does not parse\n%s", path, d.text ? d.text : "");
    failures++;
  } else {
    for (int c = 0; c < m->ncomps; c++)
      for (int k = 0; k < m->comps[c]->ninstrs; k++)
        if (m->comps[c]->instrs[k]->sharding) check_instr(base, m->comps[c]->instrs[k]);
    if (strstr(base, "sdy_shard_map")) check_shardy(m);
  }
  ts_hlo_module_destroy(m);
  ts_free(text);
  ts_diag_free(&d);
}

static bool shardy;

static void check_one(const char *path, const char *base, void *ctx) {
  (void)ctx;
  check_file(path, base);
  shardy |= strstr(base, "sdy_shard_map") != NULL;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: test_sharding_corpus CORPUS_DIR\n");
    return 2;
  }
  A = ts_arena_create();
  int files = ts_corpus_walk(argv[1], check_one, NULL);
  if (files < 0) {
    ts_arena_destroy(A);
    printf("skipped: %s not found\n", argv[1]);
    return 77;
  }
  ts_arena_destroy(A);
  printf("%d files, %d shardings checked, %d named (V3) skipped\n", files, checked, named);
  /* The corpus has about 425 `sharding=` attributes (grep); a floor keeps a
   * silently empty walk from passing. */
  EXPECT(checked >= 400);
  EXPECT(shardy);
  if (failures) fprintf(stderr, "%d failure(s)\n", failures);
  return failures ? 1 : 0;
}
