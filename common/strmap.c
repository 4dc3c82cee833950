/* A string-keyed open-addressing hash map (FNV-1a, linear probing). */
#include "ts_common.h"

#include <string.h>

static uint64_t hash(const char *s, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
  return h;
}

static size_t find_slot(const ts_strmap_t *m, const char *key, size_t len) {
  size_t i = hash(key, len) & (m->cap - 1);
  while (m->keys[i] && !(m->lens[i] == len && memcmp(m->keys[i], key, len) == 0))
    i = (i + 1) & (m->cap - 1);
  return i;
}

static bool grow(ts_strmap_t *m) {
  ts_strmap_t n = {0};
  n.cap = m->cap ? m->cap * 2 : 64;
  n.keys = ts_calloc(n.cap, sizeof *n.keys);
  n.lens = ts_calloc(n.cap, sizeof *n.lens);
  n.vals = ts_calloc(n.cap, sizeof *n.vals);
  if (!n.keys || !n.lens || !n.vals) {
    ts_strmap_free(&n);
    return false;
  }
  for (size_t i = 0; i < m->cap; i++) {
    if (!m->keys[i]) continue;
    size_t j = find_slot(&n, m->keys[i], m->lens[i]);
    n.keys[j] = m->keys[i];
    n.lens[j] = m->lens[i];
    n.vals[j] = m->vals[i];
  }
  n.count = m->count;
  ts_strmap_free(m);
  *m = n;
  return true;
}

bool ts_strmap_put(ts_strmap_t *m, const char *key, size_t len, void *val) {
  if ((m->count + 1) * 4 > m->cap * 3 && !grow(m)) return false;
  size_t i = find_slot(m, key, len);
  if (!m->keys[i]) {
    m->keys[i] = key;
    m->lens[i] = len;
    m->count++;
  }
  m->vals[i] = val;
  return true;
}

void *ts_strmap_get(const ts_strmap_t *m, const char *key, size_t len) {
  if (!m->cap) return NULL;
  size_t i = find_slot(m, key, len);
  return m->keys[i] ? m->vals[i] : NULL;
}

void ts_strmap_free(ts_strmap_t *m) {
  ts_free(m->keys);
  ts_free(m->lens);
  ts_free(m->vals);
  memset(m, 0, sizeof *m);
}
