/* Device meshes of slices: where a logical device sits, and how a replica
 * group splits into its intra-slice and cross-slice parts for hierarchical
 * collectives (DESIGN.md, runtime model). */
#include "sharding_internal.h"

#include <string.h>

ts_status_t ts_mesh_init(ts_mesh_t *m, int64_t slices, int64_t devices_per_slice) {
  int64_t n;
  if (!m || slices < 1 || devices_per_slice < 1 || __builtin_mul_overflow(slices, devices_per_slice, &n))
    return TS_ERR_INVALID_ARGUMENT;
  m->slices = slices;
  m->devices_per_slice = devices_per_slice;
  return TS_OK;
}

int64_t ts_mesh_num_devices(const ts_mesh_t *m) { return m ? m->slices * m->devices_per_slice : 0; }

ts_status_t ts_mesh_locate(const ts_mesh_t *m, int64_t device, int64_t *slice, int64_t *index_in_slice) {
  if (!m || device < 0 || device >= ts_mesh_num_devices(m)) return TS_ERR_INVALID_ARGUMENT;
  if (slice) *slice = device / m->devices_per_slice;
  if (index_in_slice) *index_in_slice = device % m->devices_per_slice;
  return TS_OK;
}

ts_status_t ts_mesh_device(const ts_mesh_t *m, int64_t slice, int64_t index_in_slice, int64_t *device) {
  if (!m || !device || slice < 0 || slice >= m->slices || index_in_slice < 0 ||
      index_in_slice >= m->devices_per_slice)
    return TS_ERR_INVALID_ARGUMENT;
  *device = slice * m->devices_per_slice + index_in_slice;
  return TS_OK;
}

ts_status_t ts_mesh_rank(const ts_mesh_t *m, int64_t device, int64_t *rank) {
  if (!rank) return TS_ERR_INVALID_ARGUMENT;
  TS_CHECK(ts_mesh_locate(m, device, NULL, NULL));
  *rank = device; /* slice-major numbering: see ts_sharding.h */
  return TS_OK;
}

ts_status_t ts_mesh_crosses_slices(const ts_mesh_t *m, const int64_t *devices, int64_t n, bool *crosses) {
  if (!m || !crosses || n < 0 || (n && !devices)) return TS_ERR_INVALID_ARGUMENT;
  *crosses = false;
  int64_t first = -1;
  for (int64_t k = 0; k < n; k++) {
    int64_t s;
    TS_CHECK(ts_mesh_locate(m, devices[k], &s, NULL));
    if (k == 0) first = s;
    else if (s != first) *crosses = true;
  }
  return TS_OK;
}

ts_status_t ts_mesh_split_group(const ts_mesh_t *m, const int64_t *devices, int64_t n, int64_t *intra,
                                int64_t *cross, int64_t *nslices, int64_t *per_slice) {
  if (!m || !intra || !cross || !nslices || !per_slice || n < 1 || !devices) return TS_ERR_INVALID_ARGUMENT;
  /* Slice of each member, slices numbered in order of first appearance. */
  int64_t *slot = ts_malloc(sizeof(int64_t) * 3 * (size_t)n);
  if (!slot) return TS_ERR_NOMEM;
  int64_t *seen = slot + n, *count = slot + 2 * n, s_count = 0;
  ts_status_t st = TS_OK;
  for (int64_t k = 0; k < n; k++) {
    int64_t s;
    TS_CHECK_GOTO(ts_mesh_locate(m, devices[k], &s, NULL), st, done);
    for (int64_t j = 0; j < k; j++)
      if (devices[j] == devices[k]) {
        st = TS_ERR_INVALID_ARGUMENT; /* a device twice */
        goto done;
      }
    int64_t j = 0;
    while (j < s_count && seen[j] != s) j++;
    if (j == s_count) {
      seen[s_count] = s;
      count[s_count++] = 0;
    }
    slot[k] = j;
    count[j]++;
  }
  int64_t k_per = count[0];
  for (int64_t j = 1; j < s_count; j++)
    if (count[j] != k_per) {
      st = TS_ERR_UNSUPPORTED;
      goto done;
    }
  memset(count, 0, sizeof(int64_t) * (size_t)s_count);
  for (int64_t k = 0; k < n; k++) {
    int64_t s = slot[k], pos = count[s]++;
    intra[s * k_per + pos] = devices[k];
    cross[pos * s_count + s] = devices[k];
  }
  *nslices = s_count;
  *per_slice = k_per;
done:
  ts_free(slot);
  return st;
}
