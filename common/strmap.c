/* A string-keyed open-addressing hash map: linear probing over one array of
 * slots that keep each key's hash beside it, so that a probe compares hashes
 * before it touches key text and growing never rehashes a string. The hash
 * reads eight bytes at a time (names like "multiply.123456" are two words),
 * finished with a 64-bit mixer (MurmurHash3's fmix64). */
#include "ts_common.h"

#include <string.h>

static uint64_t fmix(uint64_t h) {
  h ^= h >> 33;
  h *= UINT64_C(0xff51afd7ed558ccd);
  h ^= h >> 33;
  h *= UINT64_C(0xc4ceb9fe1a85ec53);
  h ^= h >> 33;
  return h;
}

static uint64_t hash(const char *s, size_t n) {
  uint64_t h = UINT64_C(0x9e3779b97f4a7c15) ^ n;
  for (; n >= 8; s += 8, n -= 8) {
    uint64_t w;
    memcpy(&w, s, 8);
    h = (h ^ w) * UINT64_C(0x100000001b3);
    h ^= h >> 29;
  }
  uint64_t t = 0;
  memcpy(&t, s, n);
  return fmix(h ^ t);
}

/* The slot holding key, or the empty slot where it would go. */
static ts_strmap_slot_t *find_slot(const ts_strmap_t *m, const char *key, size_t len, uint64_t h) {
  size_t mask = m->cap - 1;
  for (size_t i = (size_t)h & mask;; i = (i + 1) & mask) {
    ts_strmap_slot_t *s = &m->slots[i];
    if (!s->key || (s->hash == h && s->len == len && memcmp(s->key, key, len) == 0)) return s;
  }
}

/* Rehashes into cap slots (a power of two above twice the count). */
static bool rehash(ts_strmap_t *m, size_t cap) {
  ts_strmap_slot_t *slots = ts_calloc(cap, sizeof *slots);
  if (!slots) return false;
  for (size_t i = 0; i < m->cap; i++) {
    const ts_strmap_slot_t *s = &m->slots[i];
    if (!s->key) continue;
    size_t j = (size_t)s->hash & (cap - 1);
    while (slots[j].key) j = (j + 1) & (cap - 1);
    slots[j] = *s;
  }
  ts_free(m->slots);
  m->slots = slots;
  m->cap = cap;
  return true;
}

static bool grow(ts_strmap_t *m) { return rehash(m, m->cap ? m->cap * 2 : 64); }

bool ts_strmap_reserve(ts_strmap_t *m, size_t n) {
  size_t cap = m->cap ? m->cap : 64;
  while (cap < n * 2 && cap <= SIZE_MAX / 4) cap *= 2;
  return cap == m->cap || rehash(m, cap);
}

bool ts_strmap_put(ts_strmap_t *m, const char *key, size_t len, void *val) {
  if ((m->count + 1) * 2 > m->cap && !grow(m)) return false; /* at most half full: short probes */
  uint64_t h = hash(key, len);
  ts_strmap_slot_t *s = find_slot(m, key, len, h);
  if (!s->key) {
    *s = (ts_strmap_slot_t){.key = key, .len = len, .hash = h};
    m->count++;
  }
  s->val = val;
  return true;
}

bool ts_strmap_insert(ts_strmap_t *m, const char *key, size_t len, void *val, void **existing) {
  if ((m->count + 1) * 2 > m->cap && !grow(m)) return false;
  uint64_t h = hash(key, len);
  ts_strmap_slot_t *s = find_slot(m, key, len, h);
  if (s->key) {
    *existing = s->val;
    return true;
  }
  *s = (ts_strmap_slot_t){.key = key, .len = len, .val = val, .hash = h};
  m->count++;
  *existing = NULL;
  return true;
}

void *ts_strmap_get(const ts_strmap_t *m, const char *key, size_t len) {
  if (!m->cap) return NULL;
  const ts_strmap_slot_t *s = find_slot(m, key, len, hash(key, len));
  return s->key ? s->val : NULL;
}

void ts_strmap_free(ts_strmap_t *m) {
  ts_free(m->slots);
  memset(m, 0, sizeof *m);
}
