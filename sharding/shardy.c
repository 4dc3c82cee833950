/* Shardy input (hlo_text_format.md section 9): the frontend_attributes map,
 * `xla.sdy.meshes`, and `#sdy.sharding<...>` / `#sdy.sharding_per_value`
 * converted to the same value as the classic `sharding=`. */
#include "sharding_internal.h"

#include <ctype.h>
#include <string.h>

/* ---- a cursor over text ---- */

typedef struct {
  const char *p, *end;
  ts_arena_t *a;
} cur_t;

static void skip_ws(cur_t *c) {
  while (c->p < c->end && isspace((unsigned char)*c->p)) c->p++;
}

static bool eat(cur_t *c, char ch) {
  skip_ws(c);
  if (c->p < c->end && *c->p == ch) {
    c->p++;
    return true;
  }
  return false;
}

static bool eat_word(cur_t *c, const char *w) {
  skip_ws(c);
  size_t n = strlen(w);
  if ((size_t)(c->end - c->p) < n || memcmp(c->p, w, n) != 0) return false;
  c->p += n;
  return true;
}

static bool peek(cur_t *c, char ch) {
  skip_ws(c);
  return c->p < c->end && *c->p == ch;
}

static bool parse_int(cur_t *c, int64_t *v) {
  skip_ws(c);
  if (c->p >= c->end || !isdigit((unsigned char)*c->p)) return false;
  int64_t x = 0;
  while (c->p < c->end && isdigit((unsigned char)*c->p)) {
    if (__builtin_mul_overflow(x, 10, &x) || __builtin_add_overflow(x, *c->p - '0', &x)) return false;
    c->p++;
  }
  *v = x;
  return true;
}

/* A C-escaped string starting at '"'; the value unescaped into the arena. */
static bool parse_string(cur_t *c, const char **out) {
  skip_ws(c);
  if (c->p >= c->end || *c->p != '"') return false;
  c->p++;
  ts_buf_t b = {0};
  while (c->p < c->end && *c->p != '"') {
    char ch = *c->p++;
    if (ch == '\\' && c->p < c->end) {
      char e = *c->p++;
      switch (e) {
      case 'n': ch = '\n'; break;
      case 't': ch = '\t'; break;
      case 'r': ch = '\r'; break;
      case 'x': {
        int v = 0, k = 0;
        while (k < 2 && c->p < c->end && isxdigit((unsigned char)*c->p)) {
          int d = *c->p++;
          v = v * 16 + (isdigit(d) ? d - '0' : tolower(d) - 'a' + 10);
          k++;
        }
        ch = (char)v;
        break;
      }
      default:
        if (e >= '0' && e <= '7') {
          int v = e - '0', k = 1;
          while (k < 3 && c->p < c->end && *c->p >= '0' && *c->p <= '7') v = v * 8 + (*c->p++ - '0'), k++;
          ch = (char)v;
        } else {
          ch = e; /* \" \\ \' and anything else: the character itself */
        }
      }
    }
    ts_buf_putc(&b, ch);
  }
  bool ok = c->p < c->end && !b.oom;
  if (ok) {
    c->p++;
    *out = ts_arena_strndup(c->a, b.data ? b.data : "", b.len);
    ok = *out != NULL;
  }
  ts_buf_free(&b);
  return ok;
}

/* A balanced `{...}` (quoted strings respected), verbatim. */
static bool parse_braces(cur_t *c, const char **out) {
  skip_ws(c);
  const char *start = c->p;
  int depth = 0;
  while (c->p < c->end) {
    char ch = *c->p++;
    if (ch == '"') {
      while (c->p < c->end && *c->p != '"') c->p += *c->p == '\\' ? 2 : 1;
      if (c->p >= c->end) return false;
      c->p++;
    } else if (ch == '{') {
      depth++;
    } else if (ch == '}' && --depth == 0) {
      return (*out = ts_arena_strndup(c->a, start, (size_t)(c->p - start))) != NULL;
    }
  }
  return false;
}

/* A bare name: letters, digits, `_ . -` and `$`. */
static bool parse_name(cur_t *c, const char **s, size_t *n) {
  skip_ws(c);
  const char *start = c->p;
  while (c->p < c->end && (isalnum((unsigned char)*c->p) || strchr("_.-$", *c->p))) c->p++;
  *s = start;
  *n = (size_t)(c->p - start);
  return *n > 0;
}

/* ---- frontend attributes ---- */

ts_status_t ts_sharding_frontend_attr(ts_arena_t *a, const char *blob, const char *key, const char **value) {
  if (!a || !blob || !key || !value) return TS_ERR_INVALID_ARGUMENT;
  *value = NULL;
  cur_t c = {blob, blob + strlen(blob), a};
  if (!eat(&c, '{')) return TS_ERR_PARSE;
  if (eat(&c, '}')) return TS_OK;
  do {
    const char *k, *v = NULL;
    size_t kn;
    if (!parse_name(&c, &k, &kn) || !eat(&c, '=')) return TS_ERR_PARSE;
    if (peek(&c, '"')) {
      if (!parse_string(&c, &v)) return TS_ERR_PARSE;
    } else if (peek(&c, '{')) {
      if (!parse_braces(&c, &v)) return TS_ERR_PARSE;
    } else {
      const char *s;
      size_t n;
      if (!parse_name(&c, &s, &n) || !(v = ts_arena_strndup(a, s, n))) return TS_ERR_PARSE;
    }
    if (kn == strlen(key) && !memcmp(k, key, kn)) *value = v; /* the last one wins, like a map */
  } while (eat(&c, ','));
  return eat(&c, '}') ? TS_OK : TS_ERR_PARSE;
}

/* ---- meshes ---- */

/* `<[ "x"=2, ... ](, device_ids=[...])?>` after `#sdy.mesh` or `mesh`. */
static ts_status_t parse_mesh_body(cur_t *c, ts_sdy_mesh_t *m) {
  if (!eat(c, '<') || !eat(c, '[')) return TS_ERR_PARSE;
  int n = 0, cap = 0;
  const char **axis_names = NULL;
  int64_t *sizes = NULL;
  if (!eat(c, ']')) {
    do {
      if (n == cap) {
        int ncap = cap ? 2 * cap : 8;
        const char **nn = ts_arena_alloc(c->a, sizeof *nn * (size_t)ncap);
        int64_t *ns = sh_alloc(c->a, ncap);
        if (!nn || !ns) return TS_ERR_NOMEM;
        if (n) {
          memcpy(nn, axis_names, sizeof *nn * (size_t)n);
          memcpy(ns, sizes, sizeof *ns * (size_t)n);
        }
        axis_names = nn;
        sizes = ns;
        cap = ncap;
      }
      if (!parse_string(c, &axis_names[n]) || !eat(c, '=') || !parse_int(c, &sizes[n]) || sizes[n] < 1)
        return TS_ERR_PARSE;
      n++;
    } while (eat(c, ','));
    if (!eat(c, ']')) return TS_ERR_PARSE;
  }
  m->naxes = n;
  m->axis_names = axis_names;
  m->axis_sizes = sizes;
  m->ndevices = 1;
  for (int k = 0; k < n; k++)
    if (__builtin_mul_overflow(m->ndevices, sizes[k], &m->ndevices) || m->ndevices > (INT64_C(1) << 24))
      return TS_ERR_VERIFY;
  m->device_ids = NULL;
  if (eat(c, ',')) {
    if (!eat_word(c, "device_ids") || !eat(c, '=') || !eat(c, '[')) return TS_ERR_PARSE;
    int64_t *ids = sh_alloc(c->a, m->ndevices);
    if (!ids) return TS_ERR_NOMEM;
    int64_t k = 0;
    do {
      int64_t v;
      if (!parse_int(c, &v)) return TS_ERR_PARSE;
      if (k >= m->ndevices) return TS_ERR_VERIFY;
      ids[k++] = v;
    } while (eat(c, ','));
    if (!eat(c, ']') || k != m->ndevices) return k != m->ndevices ? TS_ERR_VERIFY : TS_ERR_PARSE;
    for (int64_t i = 0; i < k; i++)
      for (int64_t j = 0; j < i; j++)
        if (ids[i] == ids[j]) return TS_ERR_VERIFY;
    m->device_ids = ids;
  }
  return eat(c, '>') ? TS_OK : TS_ERR_PARSE;
}

ts_status_t ts_sharding_sdy_meshes_parse(ts_arena_t *a, const char *text, ts_sdy_meshes_t **out) {
  if (!a || !text || !out) return TS_ERR_INVALID_ARGUMENT;
  cur_t c = {text, text + strlen(text), a};
  ts_sdy_meshes_t *ms = ts_arena_alloc(a, sizeof *ms);
  if (!ms) return TS_ERR_NOMEM;
  if (!eat(&c, '{')) return TS_ERR_PARSE;
  int cap = 0;
  ts_sdy_mesh_t *v = NULL;
  if (!eat(&c, '}')) {
    do {
      if (ms->n == cap) {
        cap = cap ? 2 * cap : 4;
        ts_sdy_mesh_t *nv = ts_arena_alloc(a, sizeof *nv * (size_t)cap);
        if (!nv) return TS_ERR_NOMEM;
        if (ms->n) memcpy(nv, v, sizeof *nv * (size_t)ms->n);
        v = nv;
      }
      ts_sdy_mesh_t *m = &v[ms->n];
      const char *name;
      size_t n;
      if (peek(&c, '"')) {
        if (!parse_string(&c, &m->name)) return TS_ERR_PARSE;
      } else {
        if (!parse_name(&c, &name, &n)) return TS_ERR_PARSE;
        if (!(m->name = ts_arena_strndup(a, name, n))) return TS_ERR_NOMEM;
      }
      if (!eat(&c, '=') || !eat_word(&c, "#sdy.mesh")) return TS_ERR_PARSE;
      TS_CHECK(parse_mesh_body(&c, m));
      ms->n++;
    } while (eat(&c, ','));
    if (!eat(&c, '}')) return TS_ERR_PARSE;
  }
  skip_ws(&c);
  if (c.p != c.end) return TS_ERR_PARSE;
  ms->meshes = v;
  *out = ms;
  return TS_OK;
}

ts_status_t ts_sharding_sdy_module_meshes(ts_arena_t *a, const ts_hlo_module_t *m, ts_sdy_meshes_t **out) {
  if (!a || !m || !out) return TS_ERR_INVALID_ARGUMENT;
  const ts_hlo_attr_t *fa = ts_hlo_module_attr(m, "frontend_attributes");
  const char *text = NULL;
  if (fa && (fa->kind == TS_ATTR_BLOB || fa->kind == TS_ATTR_STRING || fa->kind == TS_ATTR_RAW))
    TS_CHECK(ts_sharding_frontend_attr(a, fa->v.s, "xla.sdy.meshes", &text));
  return ts_sharding_sdy_meshes_parse(a, text ? text : "{}", out);
}

/* ---- shardings ---- */

/* One axis reference: the whole axis (pre = 1, size = axis size) or a
 * sub-axis `"y":(pre)size`. */
typedef struct {
  int axis;
  int64_t pre, size;
} axis_ref_t;

typedef struct {
  int ndims;
  int nrefs[SH_MAX_RANK];
  axis_ref_t *refs[SH_MAX_RANK];
} dim_shardings_t;

static ts_status_t find_axis(const ts_sdy_mesh_t *m, const char *name, int *axis) {
  for (int k = 0; k < m->naxes; k++)
    if (!strcmp(m->axis_names[k], name)) {
      *axis = k;
      return TS_OK;
    }
  return TS_ERR_VERIFY;
}

/* `"x"` or `"y":(2)2` */
static ts_status_t parse_axis_ref(cur_t *c, const ts_sdy_mesh_t *m, axis_ref_t *r) {
  const char *name;
  if (!parse_string(c, &name)) return TS_ERR_PARSE;
  TS_CHECK(find_axis(m, name, &r->axis));
  r->pre = 1;
  r->size = m->axis_sizes[r->axis];
  if (eat(c, ':')) {
    if (!eat(c, '(') || !parse_int(c, &r->pre) || !eat(c, ')') || !parse_int(c, &r->size)) return TS_ERR_PARSE;
    int64_t span; /* pre * size, which user text can make overflow */
    if (r->pre < 1 || r->size < 1 || __builtin_mul_overflow(r->pre, r->size, &span) ||
        m->axis_sizes[r->axis] % span != 0)
      return TS_ERR_VERIFY;
  }
  return TS_OK;
}

/* `{refs..., ?}` followed by an optional priority `p<N>`. */
static ts_status_t parse_axis_list(cur_t *c, const ts_sdy_mesh_t *m, axis_ref_t **refs, int *n, bool dim) {
  if (!eat(c, '{')) return TS_ERR_PARSE;
  *n = 0;
  *refs = NULL;
  int cap = 0;
  if (!eat(c, '}')) {
    do {
      if (eat(c, '?')) continue; /* open: propagation may add axes; ignored here */
      if (*n == cap) {
        cap = cap ? 2 * cap : 4;
        axis_ref_t *nr = ts_arena_alloc(c->a, sizeof *nr * (size_t)cap);
        if (!nr) return TS_ERR_NOMEM;
        if (*n) memcpy(nr, *refs, sizeof *nr * (size_t)*n);
        *refs = nr;
      }
      TS_CHECK(parse_axis_ref(c, m, &(*refs)[(*n)++]));
    } while (eat(c, ','));
    if (!eat(c, '}')) return TS_ERR_PARSE;
  }
  if (dim && c->p < c->end && *c->p == 'p') { /* priority */
    int64_t prio;
    c->p++;
    if (!parse_int(c, &prio)) return TS_ERR_PARSE;
  }
  return TS_OK;
}

/* MESH: `@name`, `mesh<...>` or `#sdy.mesh<...>` (inline). */
static ts_status_t parse_mesh_ref(cur_t *c, const ts_sdy_meshes_t *meshes, const ts_sdy_mesh_t **out) {
  if (eat(c, '@')) {
    const char *name;
    size_t n;
    if (peek(c, '"')) {
      if (!parse_string(c, &name)) return TS_ERR_PARSE;
      n = strlen(name);
    } else if (!parse_name(c, &name, &n)) {
      return TS_ERR_PARSE;
    }
    for (int k = 0; meshes && k < meshes->n; k++)
      if (strlen(meshes->meshes[k].name) == n && !memcmp(meshes->meshes[k].name, name, n)) {
        *out = &meshes->meshes[k];
        return TS_OK;
      }
    return TS_ERR_VERIFY;
  }
  ts_sdy_mesh_t *m = ts_arena_alloc(c->a, sizeof *m);
  if (!m) return TS_ERR_NOMEM;
  if (!eat_word(c, "#sdy.mesh") && !eat_word(c, "mesh")) return TS_ERR_PARSE;
  m->name = "";
  TS_CHECK(parse_mesh_body(c, m));
  *out = m;
  return TS_OK;
}

/* The factors the mesh axes split into: every boundary (pre, pre * size)
 * a ref names cuts its axis. Factor f is axis axis[f] from pre pre[f],
 * size[f] long; per axis, major (small pre) first. */
typedef struct {
  int n;
  int axis[SH_MAX_RANK];
  int64_t pre[SH_MAX_RANK], size[SH_MAX_RANK];
} factors_t;

static ts_status_t axis_factors(const ts_sdy_mesh_t *m, const dim_shardings_t *ds, factors_t *f) {
  f->n = 0;
  for (int ax = 0; ax < m->naxes; ax++) {
    int64_t bounds[SH_MAX_RANK];
    int nb = 0;
    bounds[nb++] = 1;
    bounds[nb++] = m->axis_sizes[ax];
    for (int d = 0; d < ds->ndims; d++)
      for (int r = 0; r < ds->nrefs[d]; r++) {
        const axis_ref_t *ref = &ds->refs[d][r];
        if (ref->axis != ax) continue;
        if (nb + 2 > SH_MAX_RANK) return TS_ERR_UNSUPPORTED;
        bounds[nb++] = ref->pre;
        bounds[nb++] = ref->pre * ref->size;
      }
    for (int i = 1; i < nb; i++) /* insertion sort; duplicates skipped below */
      for (int j = i; j > 0 && bounds[j - 1] > bounds[j]; j--) {
        int64_t t = bounds[j];
        bounds[j] = bounds[j - 1];
        bounds[j - 1] = t;
      }
    for (int i = 1; i < nb; i++) {
      if (bounds[i] == bounds[i - 1]) continue;
      if (bounds[i] % bounds[i - 1] != 0) return TS_ERR_VERIFY; /* sub-axes that do not nest */
      if (f->n == SH_MAX_RANK) return TS_ERR_UNSUPPORTED;
      f->axis[f->n] = ax;
      f->pre[f->n] = bounds[i - 1];
      f->size[f->n++] = bounds[i] / bounds[i - 1];
    }
  }
  return TS_OK;
}

/* The tile assignment of dims sharded over mesh axes (section 9): split
 * each axis into the factors its sub-axes name, move the factors of dim 0,
 * dim 1, ... to the front and the unused ones last (a replicated
 * subgroup), and transpose the mesh's device array accordingly. */
static ts_status_t build(ts_arena_t *a, const ts_sdy_mesh_t *m, const dim_shardings_t *ds,
                         ts_sharding_value_t **out) {
  if (m->naxes == 0) {
    if (m->device_ids) return ts_sharding_maximal(a, m->device_ids[0], out);
    return ts_sharding_simple(a, TS_SHARD_REPLICATED, out);
  }
  factors_t fs;
  TS_CHECK(axis_factors(m, ds, &fs));
  /* Factors are major first per axis, so the mesh array reshaped to
   * fs.size[] is row-major. */
  int perm[SH_MAX_RANK], np = 0;
  bool used[SH_MAX_RANK] = {false};
  int64_t tdims[SH_MAX_RANK + 1];
  for (int d = 0; d < ds->ndims; d++) {
    tdims[d] = 1;
    for (int r = 0; r < ds->nrefs[d]; r++) {
      const axis_ref_t *ref = &ds->refs[d][r];
      for (int f = 0; f < fs.n; f++)
        if (fs.axis[f] == ref->axis && fs.pre[f] >= ref->pre && fs.pre[f] < ref->pre * ref->size) {
          if (used[f]) return TS_ERR_VERIFY; /* an axis used twice */
          used[f] = true;
          perm[np++] = f;
          tdims[d] *= fs.size[f];
        }
    }
  }
  int64_t rest = 1;
  for (int f = 0; f < fs.n; f++)
    if (!used[f]) {
      perm[np++] = f;
      rest *= fs.size[f];
    }
  int64_t n = m->ndevices;
  int64_t *mesh = ts_malloc(sizeof(int64_t) * 2 * (size_t)n);
  if (!mesh) return TS_ERR_NOMEM;
  for (int64_t k = 0; k < n; k++) mesh[k] = m->device_ids ? m->device_ids[k] : k;
  sh_transpose(fs.n, fs.size, mesh, perm, mesh + n);
  tdims[ds->ndims] = rest;
  ts_subgroup_t rep = TS_SUBGROUP_REPLICATED;
  ts_status_t st;
  if (ds->ndims == 0 && rest == 1) /* scalar on a one-device mesh */
    st = ts_sharding_simple(a, TS_SHARD_REPLICATED, out);
  else
    st = sh_make_tiled(a, ds->ndims + 1, tdims, mesh + n, 1, &rep, out);
  ts_free(mesh);
  return st;
}

/* `MESH, [DIMS](, replicated={...})(, unreduced={...})` up to the closing '>'. */
static ts_status_t parse_tensor_sharding(cur_t *c, const ts_sdy_meshes_t *meshes, const ts_shape_t *shape,
                                         ts_sharding_value_t **out) {
  const ts_sdy_mesh_t *m;
  TS_CHECK(parse_mesh_ref(c, meshes, &m));
  if (!eat(c, ',') || !eat(c, '[')) return TS_ERR_PARSE;
  dim_shardings_t ds = {0};
  if (!eat(c, ']')) {
    do {
      if (ds.ndims == SH_MAX_RANK) return TS_ERR_UNSUPPORTED;
      TS_CHECK(parse_axis_list(c, m, &ds.refs[ds.ndims], &ds.nrefs[ds.ndims], true));
      ds.ndims++;
    } while (eat(c, ','));
    if (!eat(c, ']')) return TS_ERR_PARSE;
  }
  while (eat(c, ',')) { /* replicated={...}, unreduced={...}: axes not tiling data */
    const char *w;
    size_t n;
    axis_ref_t *refs;
    int nrefs;
    if (!parse_name(c, &w, &n) || !eat(c, '=')) return TS_ERR_PARSE;
    TS_CHECK(parse_axis_list(c, m, &refs, &nrefs, false));
  }
  if (shape && shape->elem != TS_TOKEN && shape->elem != TS_TUPLE && shape->rank != ds.ndims) return TS_ERR_VERIFY;
  return build(c->a, m, &ds, out);
}

ts_status_t ts_sharding_from_sdy(ts_arena_t *a, const ts_sdy_meshes_t *meshes, const char *text, int nshapes,
                                 const ts_shape_t *const *shapes, ts_sharding_value_t **out) {
  if (!a || !text || !out || nshapes < 0 || (nshapes && !shapes)) return TS_ERR_INVALID_ARGUMENT;
  *out = NULL;
  cur_t c = {text, text + strlen(text), a};
  ts_status_t st;
  if (eat_word(&c, "#sdy.sharding_per_value")) {
    if (!eat(&c, '<') || !eat(&c, '[')) return TS_ERR_PARSE;
    ts_sharding_value_t *elems[256];
    int n = 0;
    if (!eat(&c, ']')) {
      do {
        if (n == 256) return TS_ERR_UNSUPPORTED;
        if (!eat(&c, '<')) return TS_ERR_PARSE;
        TS_CHECK(parse_tensor_sharding(&c, meshes, n < nshapes ? shapes[n] : NULL, &elems[n]));
        if (!eat(&c, '>')) return TS_ERR_PARSE;
        n++;
      } while (eat(&c, ','));
      if (!eat(&c, ']')) return TS_ERR_PARSE;
    }
    if (!eat(&c, '>')) return TS_ERR_PARSE;
    if (nshapes && n != nshapes) return TS_ERR_VERIFY;
    st = ts_sharding_tuple(a, n, elems, out);
  } else if (eat_word(&c, "#sdy.sharding")) {
    if (!eat(&c, '<')) return TS_ERR_PARSE;
    if (nshapes > 1) return TS_ERR_VERIFY;
    TS_CHECK(parse_tensor_sharding(&c, meshes, nshapes ? shapes[0] : NULL, out));
    st = eat(&c, '>') ? TS_OK : TS_ERR_PARSE;
  } else {
    return TS_ERR_PARSE;
  }
  skip_ws(&c);
  if (st == TS_OK && c.p != c.end) st = TS_ERR_PARSE;
  return st;
}
