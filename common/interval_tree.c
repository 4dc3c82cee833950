/* Closed intervals in a segment tree over positions, for first-fit packing
 * (ts_common.h's contract). */
#include "ts_common.h"

struct ts_interval_tree {
  int width;           /* leaves: npos rounded up to a power of two; node 1 is the root */
  int *head, *count;   /* per node: first pool entry stored there, entries stored in its subtree */
  int *pool_id, *pool_next;
  int npool, pool_cap;
  int *stamp, query;   /* stamp[id] == query: id already reported by this query */
};

ts_status_t ts_interval_tree_create(int npos, int max_id, ts_interval_tree_t **out) {
  *out = NULL;
  ts_interval_tree_t *t = ts_calloc(1, sizeof *t);
  if (!t) return TS_ERR_NOMEM;
  t->width = 1;
  while (t->width < npos) t->width *= 2;
  t->head = ts_malloc(2 * (size_t)t->width * sizeof *t->head);
  t->count = ts_calloc(2 * (size_t)t->width, sizeof *t->count);
  t->stamp = ts_malloc(((size_t)max_id + 1) * sizeof *t->stamp);
  if (!t->head || !t->count || !t->stamp) {
    ts_interval_tree_destroy(t);
    return TS_ERR_NOMEM;
  }
  for (int v = 0; v < 2 * t->width; v++) t->head[v] = -1;
  for (int id = 0; id <= max_id; id++) t->stamp[id] = -1;
  *out = t;
  return TS_OK;
}

void ts_interval_tree_destroy(ts_interval_tree_t *t) {
  if (!t) return;
  ts_free(t->head);
  ts_free(t->count);
  ts_free(t->pool_id);
  ts_free(t->pool_next);
  ts_free(t->stamp);
  ts_free(t);
}

static ts_status_t push(ts_interval_tree_t *t, int node, int id) {
  if (t->npool == t->pool_cap) {
    int cap = t->pool_cap ? t->pool_cap * 2 : 16;
    int *b = ts_realloc(t->pool_id, (size_t)cap * sizeof *b);
    if (!b) return TS_ERR_NOMEM;
    t->pool_id = b;
    int *nx = ts_realloc(t->pool_next, (size_t)cap * sizeof *nx);
    if (!nx) return TS_ERR_NOMEM;
    t->pool_next = nx;
    t->pool_cap = cap;
  }
  t->pool_id[t->npool] = id;
  t->pool_next[t->npool] = t->head[node];
  t->head[node] = t->npool++;
  return TS_OK;
}

/* Stores `id` over [a, b] in the nodes under `node` (covering [lo, hi]) that cover it exactly. */
static ts_status_t insert(ts_interval_tree_t *t, int node, int lo, int hi, int a, int b, int id) {
  if (b < lo || hi < a) return TS_OK;
  t->count[node]++;
  if (a <= lo && hi <= b) return push(t, node, id);
  int mid = lo + (hi - lo) / 2;
  TS_CHECK(insert(t, 2 * node, lo, mid, a, b, id));
  return insert(t, 2 * node + 1, mid + 1, hi, a, b, id);
}

ts_status_t ts_interval_tree_insert(ts_interval_tree_t *t, int a, int b, int id) {
  return insert(t, 1, 0, t->width - 1, a, b, id);
}

/* Every id stored on the path to the leaves of [a, b] meets it: a node on
 * that path covers part of [a, b], and what it stores covers the node. */
static void query(ts_interval_tree_t *t, int node, int lo, int hi, int a, int b, int *out, int *n) {
  if (t->count[node] == 0 || b < lo || hi < a) return;
  for (int e = t->head[node]; e >= 0; e = t->pool_next[e]) {
    int id = t->pool_id[e];
    if (t->stamp[id] == t->query) continue;
    t->stamp[id] = t->query;
    out[(*n)++] = id;
  }
  if (lo == hi) return;
  int mid = lo + (hi - lo) / 2;
  query(t, 2 * node, lo, mid, a, b, out, n);
  query(t, 2 * node + 1, mid + 1, hi, a, b, out, n);
}

int ts_interval_tree_query(ts_interval_tree_t *t, int a, int b, int *out) {
  int n = 0;
  t->query++;
  query(t, 1, 0, t->width - 1, a, b, out, &n);
  return n;
}
