/* A cache for one pass that derives many shardings (propagation, a
 * partitioner run; contract in ts_sharding.h): values hash-consed so that
 * equal values are one pointer, and derivations (remap, transpose, reshape
 * of an interned value) memoised by a key of words. A derivation then
 * costs O(rank) however many devices the tile assignment lists; only the
 * first derivation of a key touches them. */
#include "sharding_internal.h"

#include <string.h>

typedef struct {
  uint64_t hash;
  const int64_t *key; /* memo: nkey words in the cache arena; intern: NULL */
  int nkey;
  void *v;            /* memo: the result (may be NULL); intern: the value */
} slot_t;

/* One open-addressing table (linear probing, power-of-two size). */
typedef struct {
  slot_t *slots;
  size_t cap, used;
} table_t;

struct sh_cache {
  ts_arena_t *a; /* memo keys */
  table_t values, memo;
};

static uint64_t mix(uint64_t h, uint64_t w) {
  h ^= w + UINT64_C(0x9e3779b97f4a7c15) + (h << 6) + (h >> 2);
  return h;
}

static uint64_t finish(uint64_t h) {
  h ^= h >> 33;
  h *= UINT64_C(0xff51afd7ed558ccd);
  h ^= h >> 33;
  return h ? h : 1; /* 0 marks an empty slot */
}

static uint64_t value_hash(const ts_sharding_value_t *v) {
  uint64_t h = mix((uint64_t)v->kind, (uint64_t)v->ndims);
  h = mix(h, (uint64_t)v->device);
  h = mix(h, (uint64_t)v->shard_group);
  h = mix(h, (uint64_t)v->shard_group_id);
  for (int k = 0; k < v->ndims; k++) h = mix(h, (uint64_t)v->dims[k]);
  for (int k = 0; k < v->nsubgroups; k++) h = mix(h, (uint64_t)v->subgroups[k]);
  for (int64_t k = 0; k < v->ntiles; k++) h = mix(h, (uint64_t)v->devices[k]);
  return finish(h);
}

static uint64_t key_hash(const int64_t *key, int n) {
  uint64_t h = (uint64_t)n;
  for (int k = 0; k < n; k++) h = mix(h, (uint64_t)key[k]);
  return finish(h);
}

/* The same value in every respect the cache's users can see: placement
 * (ts_sharding_equal) and the shard group. */
static bool same_value(const ts_sharding_value_t *x, const ts_sharding_value_t *y) {
  return ts_sharding_equal(x, y) && x->shard_group == y->shard_group && x->shard_group_id == y->shard_group_id;
}

static bool grow(table_t *t) {
  size_t cap = t->cap ? t->cap * 2 : 256;
  slot_t *s = ts_calloc(cap, sizeof *s);
  if (!s) return false;
  for (size_t k = 0; k < t->cap; k++) {
    if (!t->slots[k].hash) continue;
    size_t j = t->slots[k].hash & (cap - 1);
    while (s[j].hash) j = (j + 1) & (cap - 1);
    s[j] = t->slots[k];
  }
  ts_free(t->slots);
  t->slots = s;
  t->cap = cap;
  return true;
}

/* The slot holding what `match` accepts under hash h, or the empty slot
 * where it would go (NULL on OOM). */
static slot_t *find(table_t *t, uint64_t h, bool (*match)(const slot_t *, const void *), const void *arg) {
  if ((t->used + 1) * 4 > t->cap * 3 && !grow(t)) return NULL;
  size_t j = h & (t->cap - 1);
  for (;; j = (j + 1) & (t->cap - 1)) {
    slot_t *s = &t->slots[j];
    if (!s->hash || (s->hash == h && match(s, arg))) return s;
  }
}

static bool match_value(const slot_t *s, const void *v) { return same_value(s->v, v); }

typedef struct {
  const int64_t *key;
  int n;
} words_t;

static bool match_key(const slot_t *s, const void *arg) {
  const words_t *k = arg;
  return s->nkey == k->n && !memcmp(s->key, k->key, sizeof *k->key * (size_t)k->n);
}

ts_status_t ts_sharding_cache_create(ts_sharding_cache_t **out) {
  ts_sharding_cache_t *c = ts_calloc(1, sizeof *c);
  if (!c || !(c->a = ts_arena_create())) {
    ts_free(c);
    return TS_ERR_NOMEM;
  }
  *out = c;
  return TS_OK;
}

void ts_sharding_cache_destroy(ts_sharding_cache_t *c) {
  if (!c) return;
  ts_free(c->values.slots);
  ts_free(c->memo.slots);
  ts_arena_destroy(c->a);
  ts_free(c);
}

ts_status_t ts_sharding_cache_intern(ts_sharding_cache_t *c, ts_sharding_value_t **v) {
  if (!*v || (*v)->kind == TS_SHARD_TUPLE) return TS_OK; /* tuples hold interned leaves, not interned themselves */
  uint64_t h = value_hash(*v);
  slot_t *s = find(&c->values, h, match_value, *v);
  if (!s) return TS_ERR_NOMEM;
  if (s->hash) {
    *v = s->v;
    return TS_OK;
  }
  *s = (slot_t){.hash = h, .v = *v};
  c->values.used++;
  return TS_OK;
}

bool ts_sharding_cache_get(ts_sharding_cache_t *c, const int64_t *key, int n, void **out) {
  if (!c->memo.cap) return false;
  words_t k = {key, n};
  uint64_t h = key_hash(key, n);
  size_t j = h & (c->memo.cap - 1);
  for (;; j = (j + 1) & (c->memo.cap - 1)) {
    const slot_t *s = &c->memo.slots[j];
    if (!s->hash) return false;
    if (s->hash == h && match_key(s, &k)) {
      *out = s->v;
      return true;
    }
  }
}

ts_status_t ts_sharding_cache_put(ts_sharding_cache_t *c, const int64_t *key, int n, void *v) {
  words_t k = {key, n};
  uint64_t h = key_hash(key, n);
  slot_t *s = find(&c->memo, h, match_key, &k);
  if (!s) return TS_ERR_NOMEM;
  if (!s->hash) {
    int64_t *copy = sh_dup(c->a, key, n);
    if (!copy) return TS_ERR_NOMEM;
    *s = (slot_t){.hash = h, .key = copy, .nkey = n};
    c->memo.used++;
  }
  s->v = v;
  return TS_OK;
}
