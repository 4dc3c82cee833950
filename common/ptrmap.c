/* A pointer-keyed open-addressing hash map (linear probing, at most half
 * full), for what is looked up by object identity: a computation's index,
 * an instruction's position. */
#include "ts_common.h"

#include <string.h>

static size_t mix(uintptr_t p) {
  uint64_t x = (uint64_t)p;
  x ^= x >> 33;
  x *= UINT64_C(0xff51afd7ed558ccd);
  x ^= x >> 33;
  return (size_t)x;
}

static bool grow(ts_ptrmap_t *m, size_t cap) {
  const void **keys = ts_calloc(cap, sizeof *keys);
  intptr_t *vals = ts_calloc(cap, sizeof *vals);
  if (!keys || !vals) {
    ts_free(keys);
    ts_free(vals);
    return false;
  }
  for (size_t i = 0; i < m->cap; i++) {
    if (!m->keys[i]) continue;
    size_t j = mix((uintptr_t)m->keys[i]) & (cap - 1);
    while (keys[j]) j = (j + 1) & (cap - 1);
    keys[j] = m->keys[i];
    vals[j] = m->vals[i];
  }
  ts_free(m->keys);
  ts_free(m->vals);
  m->keys = keys;
  m->vals = vals;
  m->cap = cap;
  return true;
}

bool ts_ptrmap_reserve(ts_ptrmap_t *m, size_t n) {
  size_t cap = m->cap ? m->cap : 16;
  while (cap < 2 * n) cap *= 2;
  return cap == m->cap || grow(m, cap);
}

bool ts_ptrmap_put(ts_ptrmap_t *m, const void *key, intptr_t val) {
  if (!ts_ptrmap_reserve(m, m->count + 1)) return false;
  size_t i = mix((uintptr_t)key) & (m->cap - 1);
  while (m->keys[i] && m->keys[i] != key) i = (i + 1) & (m->cap - 1);
  if (!m->keys[i]) {
    m->keys[i] = key;
    m->count++;
  }
  m->vals[i] = val;
  return true;
}

bool ts_ptrmap_get(const ts_ptrmap_t *m, const void *key, intptr_t *val) {
  if (!m->cap) return false;
  for (size_t i = mix((uintptr_t)key) & (m->cap - 1); m->keys[i]; i = (i + 1) & (m->cap - 1))
    if (m->keys[i] == key) {
      *val = m->vals[i];
      return true;
    }
  return false;
}

void ts_ptrmap_free(ts_ptrmap_t *m) {
  ts_free(m->keys);
  ts_free(m->vals);
  memset(m, 0, sizeof *m);
}
