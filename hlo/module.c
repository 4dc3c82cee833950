/* The HLO IR: the opcode table, shapes, and building/editing modules
 * with operand/user links kept consistent. */
#include "hlo_internal.h"

#include <pthread.h>
#include <string.h>

/* ---- tables ---- */

static const struct { const char *name; int arity; } op_info[] = {
#define X(e, s, arity) {s, arity},
#include "opcodes.def"
#undef X
};

const char *ts_opcode_name(ts_opcode_t op) { return op < TS_OP_COUNT ? op_info[op].name : "?"; }
int ts_opcode_arity(ts_opcode_t op) { return op < TS_OP_COUNT ? op_info[op].arity : -1; }

/* Spelling -> opcode + 1, built once (thread-safe) on first use. */
static ts_strmap_t op_map;
static bool op_map_ok;
static pthread_once_t op_map_once = PTHREAD_ONCE_INIT;

static void build_op_map(void) {
  op_map_ok = true;
  for (int op = 0; op < TS_OP_COUNT && op_map_ok; op++)
    op_map_ok = ts_strmap_put(&op_map, op_info[op].name, strlen(op_info[op].name), (void *)(intptr_t)(op + 1));
}

bool ts_opcode_from_name(const char *s, size_t n, ts_opcode_t *out) {
  pthread_once(&op_map_once, build_op_map);
  intptr_t v = 0;
  if (op_map_ok) {
    v = (intptr_t)ts_strmap_get(&op_map, s, n);
  } else { /* the map could not be built (out of memory): scan */
    for (int op = 0; op < TS_OP_COUNT && !v; op++)
      if (strlen(op_info[op].name) == n && memcmp(op_info[op].name, s, n) == 0) v = op + 1;
  }
  if (!v) return false;
  *out = (ts_opcode_t)(v - 1);
  return true;
}

bool ts_opcode_coll_kind(ts_opcode_t op, ts_coll_kind_t *out) {
  ts_coll_kind_t k;
  switch (op) {
  case TS_OP_ALL_REDUCE: case TS_OP_ALL_REDUCE_START: case TS_OP_ALL_REDUCE_DONE: k = TS_COLL_ALL_REDUCE; break;
  case TS_OP_ALL_GATHER: case TS_OP_ALL_GATHER_START: case TS_OP_ALL_GATHER_DONE: k = TS_COLL_ALL_GATHER; break;
  case TS_OP_REDUCE_SCATTER: k = TS_COLL_REDUCE_SCATTER; break;
  case TS_OP_ALL_TO_ALL: k = TS_COLL_ALL_TO_ALL; break;
  case TS_OP_COLLECTIVE_PERMUTE: case TS_OP_COLLECTIVE_PERMUTE_START: case TS_OP_COLLECTIVE_PERMUTE_DONE:
    k = TS_COLL_COLLECTIVE_PERMUTE;
    break;
  case TS_OP_COLLECTIVE_BROADCAST: k = TS_COLL_COLLECTIVE_BROADCAST; break;
  case TS_OP_RAGGED_ALL_TO_ALL: k = TS_COLL_RAGGED_ALL_TO_ALL; break;
  case TS_OP_COLLECTIVE_REDUCE: k = TS_COLL_COLLECTIVE_REDUCE; break;
  case TS_OP_SEND: case TS_OP_SEND_DONE: k = TS_COLL_SEND; break;
  case TS_OP_RECV: case TS_OP_RECV_DONE: k = TS_COLL_RECV; break;
  default: return false;
  }
  *out = k;
  return true;
}

ts_coll_group_mode_t ts_hlo_group_mode(const ts_hlo_instr_t *i, ts_opcode_t op) {
  const ts_hlo_attr_t *g = ts_hlo_instr_attr(i, "use_global_device_ids");
  ts_coll_kind_t kind = TS_COLL_ALL_REDUCE; /* not a collective: no cross-partition form */
  (void)ts_opcode_coll_kind(op == TS_OP_COUNT ? i->op : op, &kind);
  return ts_coll_group_mode(kind, ts_hlo_instr_attr(i, "channel_id") != NULL,
                            g && g->kind == TS_ATTR_BOOL && g->v.b);
}

/* ---- shapes ---- */

uint64_t ts_shape_bytes(const ts_shape_t *s) {
  if (!s) return 0;
  if (s->elem == TS_TUPLE) {
    uint64_t b = 0;
    for (int k = 0; k < s->ntuple; k++) b += ts_shape_bytes(s->tuple[k]);
    return b;
  }
  if (!ts_elem_is_array(s->elem)) return 0;
  return ((uint64_t)ts_shape_elements(s) * (uint64_t)ts_elem_bits(s->elem) + 7) / 8;
}

uint64_t ts_shape_storage_bytes(const ts_shape_t *s) {
  if (!s) return 0;
  if (s->elem == TS_TUPLE) {
    uint64_t b = 0;
    for (int k = 0; k < s->ntuple; k++) b += ts_shape_storage_bytes(s->tuple[k]);
    return b;
  }
  if (!ts_elem_is_array(s->elem)) return 0;
  return (uint64_t)ts_shape_elements(s) * (uint64_t)ts_elem_storage_bytes(s->elem);
}

int64_t ts_shape_elements(const ts_shape_t *s) {
  int64_t n = 1;
  for (int d = 0; d < s->rank; d++) n *= s->dims[d];
  return n;
}

bool ts_shape_is_array(const ts_shape_t *s) { return ts_elem_is_array(s->elem); }

int ts_shape_leaf_count(const ts_shape_t *s) {
  if (s->elem != TS_TUPLE) return 1;
  int n = 0;
  for (int i = 0; i < s->ntuple; i++) n += ts_shape_leaf_count(s->tuple[i]);
  return n;
}

static bool layout_equal(const ts_layout_t *a, const ts_layout_t *b) {
  if (a->rank != b->rank) return false;
  for (int i = 0; i < a->rank; i++)
    if (a->minor_to_major[i] != b->minor_to_major[i]) return false;
  if (a->ntiles != b->ntiles || a->element_size_bits != b->element_size_bits ||
      a->memory_space != b->memory_space)
    return false;
  for (int t = 0; t < a->ntiles; t++) {
    if (a->tiles[t].n != b->tiles[t].n) return false;
    for (int i = 0; i < a->tiles[t].n; i++)
      if (a->tiles[t].v[i] != b->tiles[t].v[i]) return false;
  }
  return true;
}

bool ts_shape_equal(const ts_shape_t *a, const ts_shape_t *b, bool layouts) {
  if (a->elem != b->elem) return false;
  if (a->elem == TS_TUPLE) {
    if (a->ntuple != b->ntuple) return false;
    for (int i = 0; i < a->ntuple; i++)
      if (!ts_shape_equal(a->tuple[i], b->tuple[i], layouts)) return false;
    return true;
  }
  if (a->rank != b->rank) return false;
  for (int d = 0; d < a->rank; d++) {
    if (a->dims[d] != b->dims[d]) return false;
    bool da = a->dynamic && a->dynamic[d], db = b->dynamic && b->dynamic[d];
    if (da != db) return false;
  }
  if (layouts && a->layout && b->layout && !layout_equal(a->layout, b->layout)) return false;
  return true;
}

ts_shape_t *ts_hlo_shape_array(ts_hlo_module_t *m, ts_elem_t elem, int rank, const int64_t *dims) {
  ts_shape_t *s = ts_hlo_module_alloc(m, sizeof *s, ts_hlo_align_for(sizeof *s));
  if (!s) return NULL;
  s->elem = elem;
  s->rank = rank;
  if (rank > 0) {
    s->dims = ts_hlo_module_alloc(m, sizeof(int64_t) * (size_t)rank, sizeof(int64_t));
    if (!s->dims) return NULL;
    memcpy(s->dims, dims, sizeof(int64_t) * (size_t)rank);
  }
  return s;
}

ts_shape_t *ts_hlo_shape_tuple(ts_hlo_module_t *m, int n, ts_shape_t *const *elems) {
  ts_shape_t *s = ts_hlo_module_alloc(m, sizeof *s, ts_hlo_align_for(sizeof *s));
  if (!s) return NULL;
  s->elem = TS_TUPLE;
  s->ntuple = n;
  if (n > 0) {
    s->tuple = ts_hlo_module_alloc(m, sizeof(ts_shape_t *) * (size_t)n, sizeof(ts_shape_t *));
    if (!s->tuple) return NULL;
    memcpy(s->tuple, elems, sizeof(ts_shape_t *) * (size_t)n);
  }
  return s;
}

/* ---- module memory ---- */

/* Pool blocks are carved without the arena's 16-byte rounding: an
 * instruction (152 bytes) or a name (a dozen) would otherwise pay up to 15
 * bytes each, and on these machines every fresh page costs a slow fault.
 * Requests above POOL_MAX go to the arena, so a block's unusable tail stays
 * small. */
enum { POOL_BLOCK = 64 * 1024, POOL_MAX = 1024 };

size_t ts_hlo_align_for(size_t elem_size) {
  size_t a = elem_size & (~elem_size + 1);
  return a == 0 || a > 16 ? 16 : a;
}

void *ts_hlo_module_alloc(ts_hlo_module_t *m, size_t size, size_t align) {
  if (size == 0) size = 1;
  if (size > POOL_MAX) return ts_arena_alloc(m->arena, size);
  size_t pad = (size_t)(-(uintptr_t)m->pool & (align - 1));
  if (!m->pool || m->pool_left < pad + size) {
    char *b = ts_arena_alloc(m->arena, POOL_BLOCK); /* zeroed, 16-aligned */
    if (!b) return NULL;
    m->pool = b;
    m->pool_left = POOL_BLOCK;
    pad = 0;
  }
  void *p = m->pool + pad;
  m->pool += pad + size;
  m->pool_left -= pad + size;
  return p;
}

char *ts_hlo_module_strndup(ts_hlo_module_t *m, const char *s, size_t n) {
  char *c = ts_hlo_module_alloc(m, n + 1, 1);
  if (!c) return NULL;
  memcpy(c, s, n);
  c[n] = '\0';
  return c;
}

const char *ts_hlo_intern(ts_hlo_module_t *m, const char *s, size_t n) {
  const char *had = ts_strmap_get(&m->interned, s, n);
  if (had) return had;
  char *c = ts_hlo_module_strndup(m, s, n);
  if (!c || !ts_strmap_put(&m->interned, c, n, c)) return NULL;
  return c;
}

/* ---- shared shapes ---- */

static void key_put(ts_buf_t *b, const void *v, size_t n) { ts_buf_append(b, (const char *)v, n); }

static void key_i64s(ts_buf_t *b, const int64_t *v, int n) {
  key_put(b, &n, sizeof n);
  if (n > 0) key_put(b, v, sizeof *v * (size_t)n);
}

/* The bytes that tell shapes apart, every field the printer or a pass can
 * see, into b. A tuple's elements are shared shapes: their addresses stand
 * for them. */
static void shape_key(ts_buf_t *b, const ts_shape_t *s, ts_shape_t *const *elems) {
  b->len = 0;
  int32_t head[2] = {(int32_t)s->elem, s->elem == TS_TUPLE ? s->ntuple : s->rank};
  key_put(b, head, sizeof head);
  if (s->elem == TS_TUPLE) {
    if (s->ntuple > 0) key_put(b, elems, sizeof *elems * (size_t)s->ntuple);
    return;
  }
  if (s->rank > 0) key_put(b, s->dims, sizeof *s->dims * (size_t)s->rank);
  uint8_t flags = (uint8_t)((s->dynamic ? 1 : 0) | (s->layout ? 2 : 0));
  key_put(b, &flags, 1);
  if (s->dynamic && s->rank > 0) key_put(b, s->dynamic, (size_t)s->rank);
  const ts_layout_t *l = s->layout;
  if (!l) return;
  key_i64s(b, l->minor_to_major, l->rank);
  key_put(b, &l->ntiles, sizeof l->ntiles);
  for (int t = 0; t < l->ntiles; t++) key_i64s(b, l->tiles[t].v, l->tiles[t].n);
  int64_t ext[2] = {l->element_size_bits, l->memory_space};
  key_put(b, ext, sizeof ext);
  if (l->other) key_put(b, l->other, strlen(l->other) + 1); /* its NUL ends it */
}

static int64_t *copy_i64s(ts_hlo_module_t *m, const int64_t *v, int n) {
  if (n <= 0) return NULL;
  int64_t *c = ts_hlo_module_alloc(m, sizeof *c * (size_t)n, sizeof *c);
  if (c) memcpy(c, v, sizeof *c * (size_t)n);
  return c;
}

/* A copy of array shape s in module memory. */
static ts_shape_t *copy_array_shape(ts_hlo_module_t *m, const ts_shape_t *s) {
  ts_shape_t *c = ts_hlo_module_alloc(m, sizeof *c, ts_hlo_align_for(sizeof *c));
  if (!c) return NULL;
  c->elem = s->elem;
  c->rank = s->rank;
  if (s->rank > 0 && !(c->dims = copy_i64s(m, s->dims, s->rank))) return NULL;
  if (s->dynamic && s->rank > 0) {
    if (!(c->dynamic = ts_hlo_module_alloc(m, (size_t)s->rank, 1))) return NULL;
    memcpy(c->dynamic, s->dynamic, (size_t)s->rank);
  }
  const ts_layout_t *l = s->layout;
  if (!l) return c;
  ts_layout_t *cl = ts_hlo_module_alloc(m, sizeof *cl, ts_hlo_align_for(sizeof *cl));
  if (!cl) return NULL;
  *cl = *l;
  if (l->rank > 0 && !(cl->minor_to_major = copy_i64s(m, l->minor_to_major, l->rank))) return NULL;
  if (l->ntiles > 0) {
    cl->tiles = ts_hlo_module_alloc(m, sizeof *cl->tiles * (size_t)l->ntiles, ts_hlo_align_for(sizeof *cl->tiles));
    if (!cl->tiles) return NULL;
    for (int t = 0; t < l->ntiles; t++) {
      cl->tiles[t].n = l->tiles[t].n;
      if (l->tiles[t].n > 0 && !(cl->tiles[t].v = copy_i64s(m, l->tiles[t].v, l->tiles[t].n))) return NULL;
    }
  }
  if (l->other && !(cl->other = ts_hlo_module_strndup(m, l->other, strlen(l->other)))) return NULL;
  c->layout = cl;
  return c;
}

/* The shared shape equal to s: s itself when `adopt` and none is there yet,
 * else a copy. elems are s's tuple elements as shared shapes. */
static ts_shape_t *intern(ts_hlo_module_t *m, const ts_shape_t *s, ts_shape_t *const *elems, bool adopt) {
  ts_buf_t *b = &m->shape_key;
  shape_key(b, s, elems);
  if (b->oom) return NULL;
  ts_shape_t *had = ts_strmap_get(&m->shape_keys, b->data, b->len);
  if (had) return had;
  ts_shape_t *c;
  if (adopt) {
    c = (ts_shape_t *)s;
  } else if (s->elem == TS_TUPLE) {
    c = ts_hlo_module_alloc(m, sizeof *c, ts_hlo_align_for(sizeof *c));
    if (!c) return NULL;
    c->elem = TS_TUPLE;
    c->ntuple = s->ntuple;
    if (s->ntuple > 0) {
      c->tuple = ts_hlo_module_alloc(m, sizeof *c->tuple * (size_t)s->ntuple, sizeof *c->tuple);
      if (!c->tuple) return NULL;
      memcpy(c->tuple, elems, sizeof *c->tuple * (size_t)s->ntuple);
    }
  } else {
    c = copy_array_shape(m, s);
  }
  /* The key must outlive the map: a copy of it, made once per shape. */
  char *key = c ? ts_hlo_module_alloc(m, b->len, 1) : NULL;
  if (!key) return NULL;
  memcpy(key, b->data, b->len);
  if (!ts_strmap_put(&m->shape_keys, key, b->len, c)) return NULL;
  return c;
}

const ts_shape_t *ts_hlo_shape_intern(ts_hlo_module_t *m, const ts_shape_t *s) {
  if (s->elem != TS_TUPLE) return intern(m, s, NULL, false);
  ts_shape_t *small[8], **elems = s->ntuple <= 8 ? small : ts_malloc(sizeof *elems * (size_t)s->ntuple);
  if (!elems) return NULL;
  const ts_shape_t *r = NULL;
  int k = 0;
  for (; k < s->ntuple; k++)
    if (!(elems[k] = (ts_shape_t *)ts_hlo_shape_intern(m, s->tuple[k]))) break;
  if (k == s->ntuple) r = intern(m, s, elems, false);
  if (elems != small) ts_free(elems);
  return r;
}

ts_shape_t *ts_hlo_shape_adopt(ts_hlo_module_t *m, ts_shape_t *s) {
  return intern(m, s, s->elem == TS_TUPLE ? s->tuple : NULL, true);
}

/* ---- growable arrays in module memory ---- */

/* Makes room for one more element in an array in module memory. The old
 * storage stays until the module dies: doubling bounds the waste to 2x. */
static bool grow_array(ts_hlo_module_t *m, void **arr, int *n, int *cap, size_t elem) {
  if (*n < *cap) return true;
  int ncap = *cap ? *cap * 2 : 4;
  void *p = ts_hlo_module_alloc(m, elem * (size_t)ncap, ts_hlo_align_for(elem));
  if (!p) return false;
  if (*n) memcpy(p, *arr, elem * (size_t)*n);
  *arr = p;
  *cap = ncap;
  return true;
}

/* ---- modules and computations ---- */

ts_hlo_module_t *ts_hlo_module_create(const char *name) {
  ts_hlo_module_t *m = ts_calloc(1, sizeof *m);
  if (!m) return NULL;
  m->arena = ts_arena_create();
  m->name = m->arena ? ts_arena_strdup(m->arena, name) : NULL;
  if (!m->name) {
    ts_hlo_module_destroy(m);
    return NULL;
  }
  m->replica_count = 1;
  m->num_partitions = 1;
  return m;
}

ts_status_t ts_hlo_module_reserve(ts_hlo_module_t *m, size_t ninstrs) {
  return ts_strmap_reserve(&m->names, m->names.count + ninstrs) ? TS_OK : TS_ERR_NOMEM;
}

void ts_hlo_module_destroy(ts_hlo_module_t *m) {
  if (!m) return;
  ts_strmap_free(&m->names);
  ts_strmap_free(&m->comp_names);
  ts_strmap_free(&m->name_next);
  ts_strmap_free(&m->interned);
  ts_strmap_free(&m->shape_keys);
  ts_buf_free(&m->shape_key);
  ts_arena_destroy(m->arena);
  ts_free(m);
}

ts_status_t ts_hlo_comp_add(ts_hlo_module_t *m, const char *name, ts_hlo_comp_t **out) {
  if (ts_strmap_get(&m->comp_names, name, strlen(name))) return TS_ERR_INVALID_ARGUMENT;
  ts_hlo_comp_t *c = ts_arena_alloc(m->arena, sizeof *c);
  if (!c || !(c->name = ts_arena_strdup(m->arena, name))) return TS_ERR_NOMEM;
  c->module = m;
  if (!grow_array(m, (void **)&m->comps, &m->ncomps, &m->comps_cap, sizeof c) ||
      !ts_strmap_put(&m->comp_names, c->name, strlen(c->name), c))
    return TS_ERR_NOMEM;
  m->comps[m->ncomps++] = c;
  *out = c;
  return TS_OK;
}

ts_hlo_comp_t *ts_hlo_module_find_comp(const ts_hlo_module_t *m, const char *name) {
  return ts_strmap_get(&m->comp_names, name, strlen(name));
}

/* "stem.n" in module memory. */
static char *suffixed(ts_hlo_module_t *m, const char *stem, size_t len, int64_t n) {
  char digits[24];
  int nd = 0;
  do digits[nd++] = (char)('0' + n % 10);
  while ((n /= 10) > 0);
  char *s = ts_hlo_module_alloc(m, len + 1 + (size_t)nd + 1, 1);
  if (!s) return NULL;
  memcpy(s, stem, len);
  s[len] = '.';
  for (int k = 0; k < nd; k++) s[len + 1 + k] = digits[nd - 1 - k];
  s[len + 1 + nd] = '\0';
  return s;
}

/* Gives i a module-unique name and enters it in m->names: `base` if free,
 * else `stem.N` with the first free N above any numeric suffix `base`
 * already has (XLA's name uniquer). The next N per stem is remembered so
 * that many clashes stay linear. NULL when out of memory. */
static const char *unique_name(ts_hlo_module_t *m, const char *base, ts_hlo_instr_t *i) {
  size_t len = strlen(base);
  char *name = ts_hlo_module_strndup(m, base, len);
  void *had;
  if (!name || !ts_strmap_insert(&m->names, name, len, i, &had)) return NULL;
  if (!had) return name;
  size_t stem = len;
  while (stem > 0 && base[stem - 1] >= '0' && base[stem - 1] <= '9') stem--;
  int64_t n = 0;
  if (stem > 0 && stem < len && base[stem - 1] == '.') {
    for (size_t k = stem; k < len && n < INT64_MAX / 10 - 10; k++) n = n * 10 + (base[k] - '0');
    stem--;
  } else {
    stem = len;
  }
  int64_t next = (int64_t)(intptr_t)ts_strmap_get(&m->name_next, base, stem);
  if (next > n) n = next;
  char *cand;
  do {
    cand = suffixed(m, base, stem, ++n);
    if (!cand || !ts_strmap_insert(&m->names, cand, strlen(cand), i, &had)) return NULL;
  } while (had);
  /* The key must outlive the map: the stem of the new name, in module memory. */
  if (n < INTPTR_MAX) ts_strmap_put(&m->name_next, cand, stem, (void *)(intptr_t)n);
  return cand;
}

static ts_status_t add_user(ts_hlo_module_t *m, ts_hlo_instr_t *def, ts_hlo_instr_t *user) {
  for (int u = 0; u < def->nusers; u++)
    if (def->users[u] == user) return TS_OK;
  if (!grow_array(m, (void **)&def->users, &def->nusers, &def->users_cap, sizeof user))
    return TS_ERR_NOMEM;
  def->users[def->nusers++] = user;
  return TS_OK;
}

ts_status_t ts_hlo_instr_add(ts_hlo_comp_t *c, ts_opcode_t op, const ts_shape_t *shape,
                             ts_hlo_instr_t *const *ops, int nops, const char *name,
                             ts_hlo_instr_t **out) {
  ts_hlo_module_t *m = c->module;
  ts_hlo_instr_t *i = ts_hlo_module_alloc(m, sizeof *i, ts_hlo_align_for(sizeof *i));
  if (!i) return TS_ERR_NOMEM;
  i->name = unique_name(m, name ? name : ts_opcode_name(op), i);
  if (!i->name) return TS_ERR_NOMEM;
  i->op = op;
  i->async_wrapped = TS_OP_COUNT;
  i->shape = shape;
  i->parent = c;
  i->id = m->next_id++;
  i->param_number = -1;
  if (nops > 0) {
    i->ops = ts_hlo_module_alloc(m, sizeof(ts_hlo_instr_t *) * (size_t)nops, sizeof(ts_hlo_instr_t *));
    if (!i->ops) return TS_ERR_NOMEM;
    for (int k = 0; k < nops; k++) {
      i->ops[k] = ops[k];
      /* i is new: if ops[k] has it as a user already (an operand used
       * twice), it is its last. Scanning every user instead made building
       * a value with many users quadratic. */
      ts_hlo_instr_t *d = ops[k];
      if (d->nusers > 0 && d->users[d->nusers - 1] == i) continue;
      if (!grow_array(m, (void **)&d->users, &d->nusers, &d->users_cap, sizeof i)) return TS_ERR_NOMEM;
      d->users[d->nusers++] = i;
    }
    i->nops = nops;
  }
  if (!grow_array(m, (void **)&c->instrs, &c->ninstrs, &c->instrs_cap, sizeof i))
    return TS_ERR_NOMEM;
  c->instrs[c->ninstrs++] = i;
  *out = i;
  return TS_OK;
}

ts_status_t ts_hlo_instr_move(ts_hlo_instr_t *i, ts_hlo_comp_t *to) {
  if (!grow_array(to->module, (void **)&to->instrs, &to->ninstrs, &to->instrs_cap, sizeof i))
    return TS_ERR_NOMEM;
  to->instrs[to->ninstrs++] = i;
  i->parent = to;
  return TS_OK;
}

void ts_hlo_comp_renumber(ts_hlo_comp_t *c) {
  for (int k = 0; k < c->ninstrs; k++) c->instrs[k]->id = c->module->next_id++;
}

ts_hlo_instr_t *ts_hlo_comp_find_instr(const ts_hlo_comp_t *c, const char *name) {
  ts_hlo_instr_t *i = ts_strmap_get(&c->module->names, name, strlen(name));
  return i && i->parent == c ? i : NULL;
}

ts_status_t ts_hlo_instr_add_operand(ts_hlo_instr_t *i, ts_hlo_instr_t *op) {
  ts_hlo_module_t *m = i->parent->module;
  int cap = i->nops; /* ops is exactly sized: grow by reallocating */
  ts_hlo_instr_t **ops = ts_hlo_module_alloc(m, sizeof(ts_hlo_instr_t *) * (size_t)(cap + 1), sizeof *ops);
  if (!ops) return TS_ERR_NOMEM;
  if (i->nops) memcpy(ops, i->ops, sizeof(ts_hlo_instr_t *) * (size_t)i->nops);
  ops[i->nops] = op;
  i->ops = ops;
  i->nops++;
  return add_user(m, op, i);
}

ts_status_t ts_hlo_instr_reserve_attrs(ts_hlo_instr_t *i, int n) {
  if (n <= i->attrs_cap - i->nattrs) return TS_OK;
  int cap = i->nattrs + n;
  ts_hlo_attr_t *a = ts_hlo_module_alloc(i->parent->module, sizeof *a * (size_t)cap, ts_hlo_align_for(sizeof *a));
  if (!a) return TS_ERR_NOMEM;
  if (i->nattrs) memcpy(a, i->attrs, sizeof *a * (size_t)i->nattrs);
  i->attrs = a;
  i->attrs_cap = cap;
  return TS_OK;
}

ts_status_t ts_hlo_instr_add_attr(ts_hlo_instr_t *i, const ts_hlo_attr_t *a) {
  ts_hlo_module_t *m = i->parent->module;
  if (!grow_array(m, (void **)&i->attrs, &i->nattrs, &i->attrs_cap, sizeof *a))
    return TS_ERR_NOMEM;
  i->attrs[i->nattrs++] = *a;
  if (a->kind == TS_ATTR_COMP || a->kind == TS_ATTR_COMP_LIST) {
    int n = i->ncalled + a->v.comps.n;
    ts_hlo_comp_t **called = ts_hlo_module_alloc(m, sizeof(ts_hlo_comp_t *) * (size_t)(n ? n : 1), sizeof *called);
    if (!called) return TS_ERR_NOMEM;
    if (i->ncalled) memcpy(called, i->called, sizeof(ts_hlo_comp_t *) * (size_t)i->ncalled);
    for (int k = 0; k < a->v.comps.n; k++) called[i->ncalled + k] = a->v.comps.comps[k];
    i->called = called;
    i->ncalled = n;
  }
  return TS_OK;
}

const ts_hlo_attr_t *ts_hlo_instr_attr(const ts_hlo_instr_t *i, const char *name) {
  for (int k = 0; k < i->nattrs; k++)
    if (strcmp(i->attrs[k].name, name) == 0) return &i->attrs[k];
  return NULL;
}

ts_status_t ts_hlo_module_add_attr(ts_hlo_module_t *m, const ts_hlo_attr_t *a) {
  if (!grow_array(m, (void **)&m->attrs, &m->nattrs, &m->attrs_cap, sizeof *a))
    return TS_ERR_NOMEM;
  m->attrs[m->nattrs++] = *a;
  if (a->kind == TS_ATTR_INT && strcmp(a->name, "replica_count") == 0) m->replica_count = a->v.i;
  if (a->kind == TS_ATTR_INT && strcmp(a->name, "num_partitions") == 0) m->num_partitions = a->v.i;
  return TS_OK;
}

const ts_hlo_attr_t *ts_hlo_module_attr(const ts_hlo_module_t *m, const char *name) {
  for (int k = 0; k < m->nattrs; k++)
    if (strcmp(m->attrs[k].name, name) == 0) return &m->attrs[k];
  return NULL;
}

void ts_hlo_comp_set_root(ts_hlo_comp_t *c, ts_hlo_instr_t *root) {
  if (c->root) c->root->is_root = false;
  c->root = root;
  if (root) root->is_root = true;
}

ts_status_t ts_hlo_comp_index_params(ts_hlo_comp_t *c) {
  int64_t max = -1;
  for (int k = 0; k < c->ninstrs; k++)
    if (c->instrs[k]->op == TS_OP_PARAMETER && c->instrs[k]->param_number > max) max = c->instrs[k]->param_number;
  c->nparams = (int)(max + 1);
  c->params = NULL;
  if (max < 0) return TS_OK;
  c->params = ts_arena_alloc(c->module->arena, sizeof *c->params * (size_t)c->nparams);
  if (!c->params) return TS_ERR_NOMEM;
  memset(c->params, 0, sizeof *c->params * (size_t)c->nparams);
  for (int k = 0; k < c->ninstrs; k++) {
    ts_hlo_instr_t *i = c->instrs[k];
    if (i->op != TS_OP_PARAMETER || i->param_number < 0) continue;
    if (c->params[i->param_number]) return TS_ERR_INVALID_ARGUMENT;
    c->params[i->param_number] = i;
  }
  for (int k = 0; k < c->nparams; k++)
    if (!c->params[k]) return TS_ERR_INVALID_ARGUMENT;
  return TS_OK;
}

void ts_hlo_comp_id_range(const ts_hlo_comp_t *c, int *lo, int *hi) {
  int a = c->ninstrs ? c->instrs[0]->id : 0, b = a;
  for (int k = 1; k < c->ninstrs; k++) {
    int id = c->instrs[k]->id;
    if (id < a) a = id;
    if (id > b) b = id;
  }
  *lo = a;
  *hi = c->ninstrs ? b + 1 : a;
}

static ts_status_t post_order(const ts_hlo_comp_t *c, bool ctrl, const ts_hlo_instr_t **order) {
  int n = c->ninstrs, done = 0, lo, hi;
  ts_hlo_comp_id_range(c, &lo, &hi);
  /* per id - lo: 0 new, 1 on the stack, 2 placed */
  uint8_t *state = ts_calloc((size_t)(hi - lo) + 1, 1);
  const ts_hlo_instr_t **stack = ts_calloc((size_t)n + 1, sizeof *stack);
  int *next = ts_calloc((size_t)n + 1, sizeof *next); /* the next dependency to visit */
  ts_status_t st = TS_OK;
  if (!state || !stack || !next) {
    st = TS_ERR_NOMEM;
    goto out;
  }
  for (int k = 0; k < n; k++) {
    const ts_hlo_instr_t *s = c->instrs[k];
    if (state[s->id - lo]) continue;
    int sp = 0;
    stack[sp] = s;
    next[sp++] = 0;
    state[s->id - lo] = 1;
    while (sp > 0) {
      const ts_hlo_instr_t *top = stack[sp - 1];
      int e = next[sp - 1]++;
      const ts_hlo_instr_t *dep = NULL;
      if (e < top->nops) dep = top->ops[e];
      else if (ctrl && e < top->nops + top->nctrl_preds) dep = top->ctrl_preds[e - top->nops];
      else {
        state[top->id - lo] = 2;
        order[done++] = top;
        sp--;
        continue;
      }
      if (dep->id < lo || dep->id >= hi) { /* not an instruction of c */
        st = TS_ERR_INTERNAL;
        goto out;
      }
      if (state[dep->id - lo] == 0) {
        state[dep->id - lo] = 1;
        stack[sp] = dep;
        next[sp++] = 0;
      }
    }
  }
out:
  ts_free(state);
  ts_free(stack);
  ts_free(next);
  return st;
}

ts_status_t ts_hlo_comp_post_order(const ts_hlo_comp_t *c, const ts_hlo_instr_t **order) {
  return post_order(c, true, order);
}

ts_status_t ts_hlo_comp_operand_post_order(const ts_hlo_comp_t *c, const ts_hlo_instr_t **order) {
  return post_order(c, false, order);
}
