/* Kernels: sort and topk. One stable merge sort orders a permutation of
 * each row; the comparator is either inlined (a single compare of the first
 * operand's two parameters, read into a key array first) or called through
 * ctx->apply. Both run the same algorithm, so they agree even on comparators
 * that are not strict weak orders (FLOAT with NaN). */
#include "kernels_internal.h"

/* ---- keys -------------------------------------------------------------------- */

/* Element i as an integer whose order is XLA's TOTALORDER:
 * -NaN < -inf < ... < -0 < +0 < ... < inf < NaN. Integers keep their order
 * (unsigned ones shifted into the signed range). */
static int64_t total_order_key(ts_elem_t e, const void *p, int64_t i) {
  switch (e) {
  case TS_F64: {
    int64_t v;
    memcpy(&v, (const double *)p + i, 8);
    return v < 0 ? v ^ INT64_MAX : v;
  }
  case TS_F32: {
    int32_t v;
    memcpy(&v, (const float *)p + i, 4);
    return v < 0 ? v ^ INT32_MAX : v;
  }
  case TS_F16: case TS_BF16: {
    int16_t v;
    memcpy(&v, (const uint16_t *)p + i, 2);
    return v < 0 ? v ^ INT16_MAX : v;
  }
  default: break;
  }
  if (ts_elem_is_float(e)) { /* narrow floats: through their exact double */
    double d = ts_load_f(e, p, i);
    int64_t v;
    memcpy(&v, &d, 8);
    return v < 0 ? v ^ INT64_MAX : v;
  }
  int64_t v = ts_load_i(e, p, i);
  return ts_elem_is_unsigned_int(e) ? (int64_t)((uint64_t)v ^ (UINT64_C(1) << 63)) : v;
}

/* ---- the merge sort ---------------------------------------------------------- */

typedef struct {
  /* Inlined comparators: less(a, b) = key[a] < key[b] (or <=), the operands
   * swapped for GT/GE. */
  bool generic;
  bool swap, or_equal, dbl;
  const int64_t *ki;
  const double *kd;
  /* ctx->apply comparators: parameters 2k and 2k+1 read operand k at the
   * row's positions a and b. */
  ts_kernel_ctx_t *ctx;
  const ts_hlo_comp_t *comp;
  const ts_array_t *in;
  int nin;
  int64_t base, inner; /* element j of the row: base + j * inner */
  ts_array_t *args, res;
  ts_status_t st;
} sorter_t;

static bool generic_less(sorter_t *s, int64_t a, int64_t b) {
  if (s->st != TS_OK) return false;
  for (int k = 0; k < s->nin; k++) {
    size_t esz = (size_t)ts_elem_storage_bytes(s->in[k].elem);
    char *d = s->in[k].data;
    s->args[2 * k].data = d + (size_t)(s->base + a * s->inner) * esz;
    s->args[2 * k + 1].data = d + (size_t)(s->base + b * s->inner) * esz;
  }
  s->st = s->ctx->apply(s->ctx, s->comp, s->args, 2 * s->nin, &s->res, 1);
  return s->st == TS_OK && *(const uint8_t *)s->res.data;
}

static inline bool less(sorter_t *s, int64_t a, int64_t b) {
  if (s->generic) return generic_less(s, a, b);
  if (s->swap) {
    int64_t t = a;
    a = b, b = t;
  }
  if (s->dbl) return s->or_equal ? s->kd[a] <= s->kd[b] : s->kd[a] < s->kd[b];
  return s->or_equal ? s->ki[a] <= s->ki[b] : s->ki[a] < s->ki[b];
}

enum { RUN = 16 };

/* Sorts p[0..n) stably by `less`; tmp holds n entries. */
static void merge_sort(sorter_t *s, int64_t *p, int64_t *tmp, int64_t n) {
  for (int64_t lo = 0; lo < n; lo += RUN) {
    int64_t hi = lo + RUN < n ? lo + RUN : n;
    for (int64_t i = lo + 1; i < hi; i++) {
      int64_t x = p[i], j = i;
      for (; j > lo && less(s, x, p[j - 1]); j--) p[j] = p[j - 1];
      p[j] = x;
    }
  }
  int64_t *src = p, *dst = tmp;
  for (int64_t w = RUN; w < n; w *= 2) {
    for (int64_t lo = 0; lo < n; lo += 2 * w) {
      int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
      int64_t i = lo, j = mid, o = lo;
      if (mid < hi && !less(s, src[mid], src[mid - 1])) { /* already in order */
        memcpy(dst + lo, src + lo, sizeof *src * (size_t)(hi - lo));
        continue;
      }
      while (i < mid && j < hi) dst[o++] = less(s, src[j], src[i]) ? src[j++] : src[i++];
      while (i < mid) dst[o++] = src[i++];
      while (j < hi) dst[o++] = src[j++];
    }
    int64_t *t = src;
    src = dst, dst = t;
  }
  if (src != p) memcpy(p, src, sizeof *p * (size_t)n);
}

/* out[base + j*inner] = in[base + perm[j]*inner] over a row of n. */
static void permute_row(const ts_array_t *in, ts_array_t *out, int64_t base, int64_t inner,
                        const int64_t *perm, int64_t n) {
  int esz = ts_elem_storage_bytes(in->elem);
  const char *src = (const char *)in->data + base * esz;
  char *dst = (char *)out->data + base * esz;
  switch (esz) {
  case 4:
    for (int64_t j = 0; j < n; j++) ((uint32_t *)dst)[j * inner] = ((const uint32_t *)src)[perm[j] * inner];
    break;
  case 8:
    for (int64_t j = 0; j < n; j++) ((uint64_t *)dst)[j * inner] = ((const uint64_t *)src)[perm[j] * inner];
    break;
  default:
    for (int64_t j = 0; j < n; j++)
      memcpy(dst + j * inner * esz, src + perm[j] * inner * esz, (size_t)esz);
  }
}

/* ---- sort -------------------------------------------------------------------- */

static const char *ident_attr(const ts_hlo_instr_t *instr, const char *name) {
  const ts_hlo_attr_t *a = ts_hlo_instr_attr(instr, name);
  return a && a->kind == TS_ATTR_IDENT ? a->v.s : NULL;
}

/* Whether the comparator is one compare of parameters 0 and 1 (operand 0's
 * pair) that the sorter can inline; sets swap/or_equal/dbl and *total (keys
 * by total_order_key, else doubles for FLOAT). */
static bool inline_comparator(const ts_hlo_comp_t *c, ts_elem_t e, sorter_t *s) {
  const ts_hlo_instr_t *r = c->root;
  if (!r || r->op != TS_OP_COMPARE || r->nops != 2 || c->nparams < 2 || ts_elem_is_complex(e)) return false;
  bool direct = r->ops[0] == c->params[0] && r->ops[1] == c->params[1];
  bool swapped = r->ops[0] == c->params[1] && r->ops[1] == c->params[0];
  if (!direct && !swapped) return false;
  const char *dir = ident_attr(r, "direction"), *type = ident_attr(r, "type");
  if (!dir) return false;
  if (!strcmp(dir, "LT")) s->swap = false, s->or_equal = false;
  else if (!strcmp(dir, "GT")) s->swap = true, s->or_equal = false;
  else if (!strcmp(dir, "LE")) s->swap = false, s->or_equal = true;
  else if (!strcmp(dir, "GE")) s->swap = true, s->or_equal = true;
  else return false;
  if (swapped) s->swap = !s->swap;
  if (!type) type = ts_elem_is_float(e) ? "FLOAT" : "TOTALORDER"; /* integers: their own order */
  if (!strcmp(type, "FLOAT")) s->dbl = ts_elem_is_float(e);
  else if (!strcmp(type, "TOTALORDER")) s->dbl = false;
  else if (!strcmp(type, "SIGNED") || !strcmp(type, "UNSIGNED")) {
    if (!ts_elem_is_int(e)) return false;
    s->dbl = false;
  } else {
    return false;
  }
  return true;
}

static ts_status_t k_sort(ts_kernel_ctx_t *ctx, const ts_hlo_instr_t *instr, const ts_array_t *in, int nin,
                          ts_array_t *out, int nout) {
  const ts_hlo_attr_t *da = ts_hlo_instr_attr(instr, "dimensions");
  const ts_hlo_attr_t *ta = ts_hlo_instr_attr(instr, "to_apply");
  if (!da || da->kind != TS_ATTR_INT_LIST || da->v.list.n != 1 || !ta || ta->kind != TS_ATTR_COMP ||
      ta->v.comps.n != 1 || nout != nin)
    return ts_kernel_fail(ctx, instr, TS_ERR_INVALID_ARGUMENT, "sort needs dimensions={d} and to_apply");
  int64_t dim = da->v.list.v[0];
  const ts_array_t *x = &in[0];
  int64_t n = x->dims[dim], outer = 1, inner = 1;
  for (int d = 0; d < dim; d++) outer *= x->dims[d];
  for (int d = (int)dim + 1; d < x->rank; d++) inner *= x->dims[d];
  if (n == 0 || outer == 0 || inner == 0) return TS_OK;

  sorter_t s = {0};
  s.ctx = ctx;
  s.comp = ta->v.comps.comps[0];
  s.in = in;
  s.nin = nin;
  s.inner = inner;
  s.generic = !inline_comparator(s.comp, x->elem, &s);
  int64_t *perm, *tmp;
  void *keys = NULL;
  uint8_t result = 0;
  if (s.generic) {
    /* Held across ctx->apply, which may use the context's scratch itself. */
    perm = ts_malloc(sizeof(int64_t) * (size_t)(2 * n));
    s.args = ts_calloc((size_t)(2 * nin), sizeof *s.args);
    if (!perm || !s.args) {
      ts_free(perm);
      ts_free(s.args);
      return ts_kernel_fail(ctx, instr, TS_ERR_NOMEM, "out of memory sorting %lld elements", (long long)n);
    }
    for (int k = 0; k < nin; k++) s.args[2 * k] = s.args[2 * k + 1] = (ts_array_t){in[k].elem, 0, NULL, NULL};
    s.res = (ts_array_t){TS_PRED, 0, NULL, &result};
  } else {
    perm = ts_kernel_scratch(ctx, sizeof(int64_t) * (size_t)(3 * n));
    if (!perm) return ts_kernel_fail(ctx, instr, TS_ERR_NOMEM, "out of memory sorting %lld elements", (long long)n);
    keys = perm + 2 * n;
    s.ki = keys;
    s.kd = keys;
  }
  tmp = perm + n;

  for (int64_t o = 0; o < outer && s.st == TS_OK; o++) {
    for (int64_t i = 0; i < inner && s.st == TS_OK; i++) {
      int64_t base = o * n * inner + i;
      s.base = base;
      for (int64_t j = 0; j < n; j++) perm[j] = j;
      if (!s.generic) {
        if (s.dbl) {
          double *kd = keys;
          if (x->elem == TS_F32)
            for (int64_t j = 0; j < n; j++) kd[j] = ((const float *)x->data)[base + j * inner];
          else
            for (int64_t j = 0; j < n; j++) kd[j] = ts_load_f(x->elem, x->data, base + j * inner);
        } else {
          int64_t *ki = keys;
          for (int64_t j = 0; j < n; j++) ki[j] = total_order_key(x->elem, x->data, base + j * inner);
        }
      }
      merge_sort(&s, perm, tmp, n);
      if (s.st != TS_OK) break;
      for (int k = 0; k < nin; k++) permute_row(&in[k], &out[k], base, inner, perm, n);
    }
  }
  if (s.generic) {
    ts_free(perm);
    ts_free(s.args);
  }
  return s.st;
}

/* ---- topk ---------------------------------------------------------------------- */

/* The k best of a row of n (largest or smallest by TOTALORDER, ties to the
 * lower index, as XLA's stable top-k): a sorted insertion buffer when k is
 * small, else the merge sort. */
/* k and the order of a topk: its attributes, or for XLA's TopK custom-call
 * the result's last dim and the comparator's direction (GT: largest). */
static bool topk_params(const ts_hlo_instr_t *instr, const ts_array_t *out, int64_t *k, bool *largest) {
  if (instr->op == TS_OP_CUSTOM_CALL) {
    const ts_hlo_instr_t *root = instr->ncalled == 1 ? instr->called[0]->root : NULL;
    const ts_hlo_attr_t *dir = root && root->op == TS_OP_COMPARE ? ts_hlo_instr_attr(root, "direction") : NULL;
    const char *d = dir && dir->kind == TS_ATTR_IDENT ? dir->v.s : "GT";
    *largest = strcmp(d, "GT") == 0 || strcmp(d, "GE") == 0;
    *k = out[0].rank > 0 ? out[0].dims[out[0].rank - 1] : 0;
    return true;
  }
  const ts_hlo_attr_t *ka = ts_hlo_instr_attr(instr, "k"), *la = ts_hlo_instr_attr(instr, "largest");
  if (!ka || ka->kind != TS_ATTR_INT) return false;
  *k = ka->v.i;
  *largest = !la || la->kind != TS_ATTR_BOOL || la->v.b;
  return true;
}

static ts_status_t k_topk(ts_kernel_ctx_t *ctx, const ts_hlo_instr_t *instr, const ts_array_t *in, int nin,
                          ts_array_t *out, int nout) {
  int64_t k;
  bool largest;
  if (nout != 2 || out[1].elem != TS_S32 || !topk_params(instr, out, &k, &largest))
    return ts_kernel_fail(ctx, instr, TS_ERR_INVALID_ARGUMENT, "topk needs k= and a (values, s32 indices) result");
  const ts_array_t *x = in;
  int64_t n = x->dims[x->rank - 1];
  int64_t rows = n ? ts_array_count(x) / n : 0;
  if (k == 0 || rows == 0) return TS_OK;
  int64_t *perm = ts_kernel_scratch(ctx, sizeof(int64_t) * (size_t)(3 * n));
  if (!perm) return ts_kernel_fail(ctx, instr, TS_ERR_NOMEM, "out of memory in topk of %lld", (long long)n);
  int64_t *tmp = perm + n, *key = perm + 2 * n;
  sorter_t s = {0};
  s.swap = largest; /* descending: less(a, b) = key[b] < key[a] */
  s.ki = key;
  int esz = ts_elem_storage_bytes(x->elem);
  bool small = k <= 32 && k * 8 <= n;
  for (int64_t r = 0; r < rows; r++) {
    for (int64_t j = 0; j < n; j++) key[j] = total_order_key(x->elem, x->data, r * n + j);
    if (small) {
      /* perm[0..m) are the best so far, best first. */
      int64_t m = 0;
      for (int64_t j = 0; j < n; j++) {
        if (m == k && !less(&s, j, perm[m - 1])) continue;
        int64_t at = m < k ? m++ : k - 1;
        for (; at > 0 && less(&s, j, perm[at - 1]); at--) perm[at] = perm[at - 1];
        perm[at] = j;
      }
    } else {
      for (int64_t j = 0; j < n; j++) perm[j] = j;
      merge_sort(&s, perm, tmp, n);
    }
    const char *src = (const char *)x->data + r * n * esz;
    char *dst = (char *)out[0].data + r * k * esz;
    int32_t *ix = (int32_t *)out[1].data + r * k;
    for (int64_t j = 0; j < k; j++) {
      memcpy(dst + j * esz, src + perm[j] * esz, (size_t)esz);
      ix[j] = (int32_t)perm[j];
    }
  }
  return TS_OK;
}

void ts_kernels_sort(ts_kernel_fn *table) {
  table[TS_OP_SORT] = k_sort;
  table[TS_OP_TOPK] = k_topk;
}
