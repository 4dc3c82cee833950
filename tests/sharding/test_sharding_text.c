/* Unit tests of sharding/: text: printing and every iota form. Every golden
 * is worked out by hand (the derivation is in the comment next to it) or is
 * an example from hlo_text_format.md sections 8.3 and 9. */
#include "sharding_test.h"

/* ---- text and syntax ---- */

static void test_print(void) {
  EXPECT_PRINT(S("{devices=[2,4]0,2,4,6,1,3,5,7}", "8,8"), "{devices=[2,4]<=[4,2]T(1,0)}");
  EXPECT_PRINT(S("{devices=[4,1]0,1,2,3}", "8,8"), "{devices=[4,1]<=[4]}");
  EXPECT_PRINT(S("{devices=[2,2]3,1,2,0}", "8,8"), "{devices=[2,2]3,1,2,0}");
  EXPECT_PRINT(S("{devices=[2,1,16]<=[32] last_tile_dim_replicate}", "8,8"),
               "{devices=[2,1,16]<=[32] last_tile_dim_replicate}");
  EXPECT_PRINT(S("{devices=[2,1]0,1 last_tile_dim_replicate}", "8"), "{devices=[2]<=[2]}");
  EXPECT_PRINT(S("{devices=[1,1,4]<=[4] last_tile_dim_replicate}", "8,8"), "{replicated}");
  EXPECT_PRINT(S("{maximal device=3}", "8"), "{maximal device=3}");
  EXPECT_PRINT(S("{manual}", "8"), "{manual}");
  EXPECT_PRINT(S("{unknown}", "8"), "{unknown}");
  EXPECT_PRINT(S("{replicated shard_like 0}", "8"), "{replicated shard_like 0}");
  EXPECT_PRINT(S("{{replicated}, {devices=[2]0,1}}", "-"), "{{replicated}, {devices=[2]<=[2]}}");
  /* to_syntax gives the struct the printer of hlo/ prints the same way */
  ts_sharding_value_t *v = S("{devices=[2,2,2]0,2,1,3,4,6,5,7 last_tile_dims={manual, replicated}}", "8");
  ts_sharding_t *s = NULL;
  EXPECT(v && ts_sharding_to_syntax(A, v, &s) == TS_OK);
  if (s) {
    EXPECT(s->kind == TS_SHARD_TILED && s->iota && s->iota_reshape.n == 3 && s->iota_perm.n == 3);
    EXPECT_I64S(s->devices.v, s->devices.n, L(0, 2, 1, 3, 4, 6, 5, 7));
    EXPECT(s->nsubgroups == 2 && !s->last_tile_dim_replicate);
  }
  int rank;
  int64_t reshape[64], perm[64];
  EXPECT(ts_sharding_iota_form((const int64_t[]){0, 2, 4, 6, 1, 3, 5, 7}, 8,
                               &rank, reshape, perm));
  EXPECT(rank == 2 && reshape[0] == 4 && reshape[1] == 2 && perm[0] == 1 && perm[1] == 0);
  EXPECT(!ts_sharding_iota_form((const int64_t[]){0, 2, 1, 4, 3, 5}, 6, &rank, reshape, perm));
  EXPECT(!ts_sharding_iota_form((const int64_t[]){1, 0}, 2, &rank, reshape, perm));
}

/* Every iota form the HLO parser expands (its own code in hlo/parser.c) is
 * found again by ts_sharding_iota_form, in merged form (no size-1 dims, no
 * two transposed dims that are adjacent in the reshape), and expands back
 * to the same devices. All reshapes of up to 4 dims of sizes 1..4 with every
 * permutation. */
static int next_perm(int64_t *p, int n) {
  int i = n - 2;
  while (i >= 0 && p[i] >= p[i + 1]) i--;
  if (i < 0) return 0;
  int j = n - 1;
  while (p[j] <= p[i]) j--;
  int64_t t = p[i];
  p[i] = p[j];
  p[j] = t;
  for (int a = i + 1, b = n - 1; a < b; a++, b--) t = p[a], p[a] = p[b], p[b] = t;
  return 1;
}

static void iota_text(ts_buf_t *b, int64_t n, int r, const int64_t *reshape, const int64_t *perm) {
  ts_buf_printf(b, "{devices=[%lld]<=[", (long long)n);
  for (int k = 0; k < r; k++) ts_buf_printf(b, "%s%lld", k ? "," : "", (long long)reshape[k]);
  ts_buf_puts(b, "]");
  if (r > 1) {
    ts_buf_puts(b, "T(");
    for (int k = 0; k < r; k++) ts_buf_printf(b, "%s%lld", k ? "," : "", (long long)perm[k]);
    ts_buf_puts(b, ")");
  }
  ts_buf_puts(b, "}");
}

static void test_iota_forms(void) {
  int cases = 0;
  for (int r = 1; r <= 4; r++) {
    int64_t dims[4];
    int total_shapes = 1;
    for (int k = 0; k < r; k++) total_shapes *= 4;
    for (int code = 0; code < total_shapes; code++) {
      int64_t n = 1;
      for (int k = 0, c = code; k < r; k++, c /= 4) n *= dims[k] = c % 4 + 1;
      if (n < 2) continue;
      int64_t perm[4] = {0, 1, 2, 3};
      do {
        ts_buf_t b = {0};
        iota_text(&b, n, r, dims, perm);
        ts_sharding_value_t *v = S(b.data, "-");
        int rank = 0;
        int64_t rs[64], pm[64];
        bool found = v && ts_sharding_iota_form(v->devices, v->ntiles, &rank, rs, pm);
        EXPECT(found);
        for (int k = 0; found && k < rank; k++) {
          EXPECT(rs[k] > 1);
          if (k + 1 < rank) EXPECT(pm[k + 1] != pm[k] + 1);
        }
        if (found) {
          ts_buf_t b2 = {0};
          iota_text(&b2, n, rank, rs, pm);
          ts_sharding_value_t *w = S(b2.data, "-");
          EXPECT(w && v && !memcmp(w->devices, v->devices, sizeof(int64_t) * (size_t)n));
          ts_buf_free(&b2);
        }
        ts_buf_free(&b);
        cases++;
      } while (next_perm(perm, r));
    }
  }
  EXPECT(cases > 1000);
}

int test_sharding_text(void) {
  A = ts_arena_create();
  test_print();
  test_iota_forms();
  ts_arena_destroy(A);
  return failures;
}
