/* ts_sharding_merge / ts_sharding_refines (XLA's MergeSharding), with
 * goldens worked out by hand in the comments. */
#include "ts_sharding.h"
#include "ts_test.h"

#include <stddef.h>

static ts_arena_t *A;

static ts_sharding_value_t *sh(const char *text) {
  ts_sharding_value_t *v = NULL;
  EXPECT(ts_sharding_parse(A, text, NULL, &v, NULL) == TS_OK);
  return v;
}

static ts_sharding_value_t *merged(const char *x, const char *y) {
  ts_sharding_value_t *m = NULL;
  EXPECT(ts_sharding_merge(A, sh(x), sh(y), &m) == TS_OK);
  return m;
}

int main(void) {
  A = ts_arena_create();
  /* x: dim 1 block 0 on {0,1}, block 1 on {2,3}; y: dim 0 block 0 on {0,2},
   * block 1 on {1,3}. Device d holds (y row, x column): 0 (0,0), 1 (1,0),
   * 2 (0,1), 3 (1,1): [2,2] devices 0,2,1,3 row-major. */
  ts_sharding_value_t *m = merged("{devices=[1,2,2]0,1,2,3 last_tile_dim_replicate}",
                                  "{devices=[2,1,2]0,2,1,3 last_tile_dim_replicate}");
  EXPECT(m && ts_sharding_equal(m, sh("{devices=[2,2]0,2,1,3}")));
  /* y' rows on {0,1} / {2,3}, like x's columns: devices 0,1 would hold
   * (0,0) and 2,3 (1,1), nobody (0,1): not a sharding. */
  EXPECT(merged("{devices=[1,2,2]0,1,2,3 last_tile_dim_replicate}",
                "{devices=[2,1,2]0,1,2,3 last_tile_dim_replicate}") == NULL);
  /* Tiled alike on a dim: they must agree there. [2,2,2] refines [2,1,4]
   * when each device keeps its row: rows of the [2,2,2] <=[8] are devices
   * 0-3 / 4-7, as in [2,1,4] <=[8]. */
  m = merged("{devices=[2,1,4]<=[8] last_tile_dim_replicate}", "{devices=[2,2,2]<=[8] last_tile_dim_replicate}");
  EXPECT(m && ts_sharding_equal(m, sh("{devices=[2,2,2]<=[8] last_tile_dim_replicate}")));
  EXPECT(ts_sharding_refines(sh("{devices=[2,2,2]<=[8] last_tile_dim_replicate}"),
                             sh("{devices=[2,1,4]<=[8] last_tile_dim_replicate}")));
  /* rows 0,2,4,6 / 1,3,5,7 in [2,1,4] disagree with <=[8]'s rows. */
  EXPECT(!ts_sharding_refines(sh("{devices=[2,2,2]<=[8] last_tile_dim_replicate}"),
                              sh("{devices=[2,1,4]<=[4,2]T(1,0) last_tile_dim_replicate}")));
  /* Different tile counts on one dim (2 vs 4) do not merge. */
  EXPECT(merged("{devices=[2,1,2]<=[4] last_tile_dim_replicate}", "{devices=[4,1]<=[4]}") == NULL);
  ts_arena_destroy(A);
  return failures ? 1 : 0;
}
