/* common/collective.c: the kind names, XLA's group-mode rule and how each
 * mode reads replica-group ids, on 2 replicas x 4 partitions (device
 * d = replica * 4 + partition). Expected groups worked out by hand from
 * shared/reference/hlo_text_format.md §7. */
#include <string.h>

#include "ts_collective.h"
#include "ts_test.h"

static bool same(const int64_t *got, int64_t n, const int64_t *want, int64_t wn) {
  return n == wn && memcmp(got, want, (size_t)n * sizeof *got) == 0;
}

int main(void) {
  /* one name per kind, and the names parse back */
  EXPECT(strcmp(ts_coll_kind_name(TS_COLL_ALL_REDUCE), "all-reduce") == 0);
  EXPECT(strcmp(ts_coll_kind_name(TS_COLL_COLLECTIVE_BROADCAST), "collective-broadcast") == 0);
  EXPECT(strcmp(ts_coll_kind_name(TS_COLL_BROADCAST), "broadcast") == 0);
  EXPECT(strcmp(ts_coll_kind_name(TS_COLL_KIND_COUNT), "?") == 0);
  for (int k = 0; k < TS_COLL_KIND_COUNT; k++) {
    ts_coll_kind_t back = TS_COLL_KIND_COUNT;
    EXPECT(ts_coll_kind_from_name(ts_coll_kind_name((ts_coll_kind_t)k), &back) && back == (ts_coll_kind_t)k);
  }
  ts_coll_kind_t k;
  EXPECT(!ts_coll_kind_from_name("all-reduce-start", &k));

  /* the mode rule */
  EXPECT(ts_coll_group_mode(TS_COLL_ALL_REDUCE, false, false) == TS_COLL_CROSS_REPLICA);
  EXPECT(ts_coll_group_mode(TS_COLL_ALL_TO_ALL, false, false) == TS_COLL_CROSS_REPLICA);
  EXPECT(ts_coll_group_mode(TS_COLL_ALL_REDUCE, true, false) == TS_COLL_CROSS_REPLICA_AND_PARTITION);
  EXPECT(ts_coll_group_mode(TS_COLL_REDUCE_SCATTER, true, true) == TS_COLL_FLATTENED_ID);
  EXPECT(ts_coll_group_mode(TS_COLL_ALL_TO_ALL, true, false) == TS_COLL_CROSS_PARTITION);
  EXPECT(ts_coll_group_mode(TS_COLL_RAGGED_ALL_TO_ALL, true, false) == TS_COLL_CROSS_PARTITION);
  EXPECT(ts_coll_group_mode(TS_COLL_COLLECTIVE_PERMUTE, true, false) == TS_COLL_CROSS_PARTITION);
  EXPECT(ts_coll_group_mode(TS_COLL_COLLECTIVE_BROADCAST, true, true) == TS_COLL_FLATTENED_ID);

  /* id spaces and own ids of device 6 = replica 1, partition 2 */
  EXPECT(ts_coll_group_id_space(TS_COLL_CROSS_REPLICA, 2, 4) == 2);
  EXPECT(ts_coll_group_id_space(TS_COLL_CROSS_PARTITION, 2, 4) == 4);
  EXPECT(ts_coll_group_id_space(TS_COLL_CROSS_REPLICA_AND_PARTITION, 2, 4) == 2);
  EXPECT(ts_coll_group_id_space(TS_COLL_FLATTENED_ID, 2, 4) == 8);
  EXPECT(ts_coll_group_id_of(TS_COLL_CROSS_REPLICA, 4, 6) == 1);
  EXPECT(ts_coll_group_id_of(TS_COLL_CROSS_PARTITION, 4, 6) == 2);
  EXPECT(ts_coll_group_id_of(TS_COLL_FLATTENED_ID, 4, 6) == 6);
  EXPECT(strcmp(ts_coll_group_id_noun(TS_COLL_CROSS_PARTITION), "partitions") == 0);

  /* device 6's groups */
  int64_t out[16], n;
  static const int64_t r01[] = {0, 1}, p23[] = {2, 3}, f[] = {7, 6, 0};
  n = ts_coll_group_devices(TS_COLL_CROSS_REPLICA, 4, 6, r01, 2, out);
  EXPECT(same(out, n, (const int64_t[]){2, 6}, 2)); /* partition 2 of each replica */
  n = ts_coll_group_devices(TS_COLL_CROSS_PARTITION, 4, 6, p23, 2, out);
  EXPECT(same(out, n, (const int64_t[]){6, 7}, 2)); /* partitions 2, 3 of replica 1 */
  n = ts_coll_group_devices(TS_COLL_CROSS_REPLICA_AND_PARTITION, 4, 6, r01, 2, out);
  EXPECT(same(out, n, (const int64_t[]){0, 1, 2, 3, 4, 5, 6, 7}, 8));
  EXPECT(ts_coll_group_devices_per_id(TS_COLL_CROSS_REPLICA_AND_PARTITION, 4) == 4);
  n = ts_coll_group_devices(TS_COLL_FLATTENED_ID, 4, 6, f, 3, out);
  EXPECT(same(out, n, (const int64_t[]){7, 6, 0}, 3));
  n = ts_coll_group_devices(TS_COLL_CROSS_PARTITION, 4, 6, NULL, 4, out); /* no groups: every id */
  EXPECT(same(out, n, (const int64_t[]){4, 5, 6, 7}, 4));
  EXPECT(ts_coll_group_device(TS_COLL_CROSS_REPLICA, 4, 6, 0) == 2);
  return failures != 0;
}
