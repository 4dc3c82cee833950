/* Unit tests of sharding/: values, canonical form, queries, transforms,
 * reshard classification, meshes and Shardy input, one file per scenario
 * group (test_sharding_GROUP.c); `test_sharding GROUP` runs one. */
#include "ts_test.h"

int test_sharding_tiles(void);
int test_sharding_queries(void);
int test_sharding_transforms(void);
int test_sharding_text(void);
int test_sharding_mesh(void);
int test_sharding_edge(void);

static const ts_test_group_t groups[] = {
    {"tiles", test_sharding_tiles},
    {"queries", test_sharding_queries},
    {"transforms", test_sharding_transforms},
    {"text", test_sharding_text},
    {"mesh", test_sharding_mesh},
    {"edge", test_sharding_edge},
};

int main(int argc, char **argv) {
  return ts_test_main("test_sharding", argc, argv, groups, (int)(sizeof groups / sizeof groups[0]));
}
