/* .npy reader and writer (NEP 1; numpy/lib/format.py is the reference for
 * the header's layout). The reader trusts nothing in the file: every length
 * is checked against the file's size before anything is allocated from it. */
#include "ts_npy.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "ts_npy assumes a little-endian host (buffers are little-endian in memory)"
#endif

static const char MAGIC[6] = {'\x93', 'N', 'U', 'M', 'P', 'Y'};

/* ---- element types ------------------------------------------------------ */

/* The numpy-native types, by dtype kind and size. */
static const struct {
  char kind;
  int size;
  ts_elem_t elem;
  const char *descr; /* as written */
} DTYPES[] = {
    {'b', 1, TS_PRED, "|b1"}, {'i', 1, TS_S8, "|i1"},   {'i', 2, TS_S16, "<i2"},
    {'i', 4, TS_S32, "<i4"},  {'i', 8, TS_S64, "<i8"},  {'u', 1, TS_U8, "|u1"},
    {'u', 2, TS_U16, "<u2"},  {'u', 4, TS_U32, "<u4"},  {'u', 8, TS_U64, "<u8"},
    {'f', 2, TS_F16, "<f2"},  {'f', 4, TS_F32, "<f4"},  {'f', 8, TS_F64, "<f8"},
    {'c', 8, TS_C64, "<c8"},  {'c', 16, TS_C128, "<c16"},
};
#define NDTYPES (sizeof DTYPES / sizeof DTYPES[0])

/* Sub-byte integers, held one per byte; returns their bits or 0. */
static int subbyte_int_bits(ts_elem_t e) {
  switch (e) {
  case TS_S1: case TS_U1: return 1;
  case TS_S2: case TS_U2: return 2;
  case TS_S4: case TS_U4: return 4;
  default: return 0;
  }
}

/* The numpy type an element type is stored as in a file (issue 3's mapping). */
static bool file_elem(ts_elem_t e, ts_elem_t *out) {
  switch (e) {
  case TS_BF16:
  case TS_F8E5M2: case TS_F8E4M3: case TS_F8E4M3FN: case TS_F8E4M3B11FNUZ: case TS_F8E5M2FNUZ:
  case TS_F8E4M3FNUZ: case TS_F8E3M4: case TS_F8E8M0FNU: case TS_F4E2M1FN: case TS_F6E2M3FN:
  case TS_F6E3M2FN: *out = TS_F32; return true; /* exact upcast */
  case TS_S1: case TS_S2: case TS_S4: *out = TS_S8; return true;
  case TS_U1: case TS_U2: case TS_U4: *out = TS_U8; return true;
  default:
    for (size_t i = 0; i < NDTYPES; i++)
      if (DTYPES[i].elem == e) {
        *out = e;
        return true;
      }
    return false;
  }
}

const char *ts_npy_descr(ts_elem_t elem) {
  ts_elem_t fe;
  if (!file_elem(elem, &fe)) return NULL;
  for (size_t i = 0; i < NDTYPES; i++)
    if (DTYPES[i].elem == fe) return DTYPES[i].descr;
  return NULL;
}

/* Bytes per element in memory (sub-byte types: one byte each). */
static size_t elem_size(ts_elem_t e) {
  int bits = ts_elem_bits(e);
  return bits < 8 ? 1 : (size_t)bits / 8;
}

/* ---- header dict -------------------------------------------------------- */

/* The header is a Python dict literal, e.g.
 *   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
 * Keys in any order, any whitespace, trailing commas; exactly the three keys. */
typedef struct {
  const char *path;
  const char *p, *end;
  ts_diag_t *diag;
  /* results */
  char descr[32];
  bool have_descr, have_fortran, have_shape;
  bool fortran;
  int rank;
  int64_t dims[TS_NPY_MAX_RANK];
} hdr_t;

static void skip_ws(hdr_t *h) {
  while (h->p < h->end && (*h->p == ' ' || *h->p == '\t' || *h->p == '\n' || *h->p == '\r'))
    h->p++;
}

static ts_status_t hdr_expected(hdr_t *h, const char *what) {
  if (h->p >= h->end) return ts_diag_path_error(h->diag, h->path, TS_ERR_PARSE, "bad header: expected %s, found the end", what);
  char c = *h->p;
  if (c >= 0x20 && c < 0x7f)
    return ts_diag_path_error(h->diag, h->path, TS_ERR_PARSE, "bad header: expected %s, found '%c'", what, c);
  return ts_diag_path_error(h->diag, h->path, TS_ERR_PARSE, "bad header: expected %s, found byte 0x%02x", what,
              (unsigned char)c);
}

static bool eat(hdr_t *h, char c) {
  skip_ws(h);
  if (h->p < h->end && *h->p == c) {
    h->p++;
    return true;
  }
  return false;
}

/* A quoted string without escapes (numpy never writes any in these keys). */
static ts_status_t parse_str(hdr_t *h, const char **s, size_t *n) {
  skip_ws(h);
  if (h->p >= h->end || (*h->p != '\'' && *h->p != '"')) return hdr_expected(h, "a quoted string");
  char q = *h->p++;
  const char *start = h->p;
  while (h->p < h->end && *h->p != q) {
    if (*h->p == '\\' || *h->p == '\n')
      return ts_diag_path_error(h->diag, h->path, TS_ERR_PARSE, "bad header: unsupported character in string");
    h->p++;
  }
  if (h->p >= h->end) return ts_diag_path_error(h->diag, h->path, TS_ERR_PARSE, "bad header: unterminated string");
  *s = start;
  *n = (size_t)(h->p - start);
  h->p++;
  return TS_OK;
}

static bool eat_word(hdr_t *h, const char *w) {
  skip_ws(h);
  size_t n = strlen(w);
  if ((size_t)(h->end - h->p) >= n && memcmp(h->p, w, n) == 0) {
    const char *after = h->p + n;
    if (after < h->end && ((*after >= 'a' && *after <= 'z') || (*after >= 'A' && *after <= 'Z') ||
                           (*after >= '0' && *after <= '9') || *after == '_'))
      return false;
    h->p = after;
    return true;
  }
  return false;
}

static ts_status_t parse_shape(hdr_t *h) {
  if (!eat(h, '(')) return hdr_expected(h, "'(' starting the shape");
  h->rank = 0;
  if (eat(h, ')')) return TS_OK;
  for (;;) {
    skip_ws(h);
    bool neg = h->p < h->end && *h->p == '-';
    if (neg) h->p++;
    if (h->p >= h->end || *h->p < '0' || *h->p > '9') return hdr_expected(h, "a dimension");
    int64_t v = 0;
    while (h->p < h->end && *h->p >= '0' && *h->p <= '9') {
      int d = *h->p++ - '0';
      if (v > (INT64_MAX - d) / 10)
        return ts_diag_path_error(h->diag, h->path, TS_ERR_PARSE, "bad header: dimension does not fit in 64 bits");
      v = v * 10 + d;
    }
    if (h->p < h->end && *h->p == 'L') h->p++; /* Python 2 long, as old numpy wrote */
    if (neg) return ts_diag_path_error(h->diag, h->path, TS_ERR_PARSE, "negative dimension -%lld in shape", (long long)v);
    if (h->rank == TS_NPY_MAX_RANK)
      return ts_diag_path_error(h->diag, h->path, TS_ERR_PARSE, "shape has more than %d dimensions", TS_NPY_MAX_RANK);
    h->dims[h->rank++] = v;
    bool comma = eat(h, ',');
    if (eat(h, ')')) {
      /* (5) is the integer 5, not a tuple */
      if (h->rank == 1 && !comma)
        return ts_diag_path_error(h->diag, h->path, TS_ERR_PARSE, "bad header: shape (N) must be written (N,)");
      return TS_OK;
    }
    if (!comma) return hdr_expected(h, "',' or ')' in the shape");
  }
}

static ts_status_t parse_header(hdr_t *h) {
  if (!eat(h, '{')) return hdr_expected(h, "'{'");
  for (;;) {
    if (eat(h, '}')) break;
    const char *key;
    size_t klen;
    TS_CHECK(parse_str(h, &key, &klen));
    if (!eat(h, ':')) return hdr_expected(h, "':' after a key");
    bool *have;
    if (klen == 5 && memcmp(key, "descr", 5) == 0) {
      have = &h->have_descr;
      skip_ws(h);
      if (h->p < h->end && *h->p == '[')
        return ts_diag_path_error(h->diag, h->path, TS_ERR_PARSE, "unsupported dtype: structured arrays are not supported");
      const char *s;
      size_t n;
      TS_CHECK(parse_str(h, &s, &n));
      if (n >= sizeof h->descr)
        return ts_diag_path_error(h->diag, h->path, TS_ERR_PARSE, "unsupported dtype '%.*s...'", 16, s);
      memcpy(h->descr, s, n);
      h->descr[n] = 0;
    } else if (klen == 13 && memcmp(key, "fortran_order", 13) == 0) {
      have = &h->have_fortran;
      if (eat_word(h, "True")) h->fortran = true;
      else if (eat_word(h, "False")) h->fortran = false;
      else return hdr_expected(h, "True or False for 'fortran_order'");
    } else if (klen == 5 && memcmp(key, "shape", 5) == 0) {
      have = &h->have_shape;
      TS_CHECK(parse_shape(h));
    } else {
      return ts_diag_path_error(h->diag, h->path, TS_ERR_PARSE, "bad header: unexpected key '%.*s'",
                  (int)(klen > 40 ? 40 : klen), key);
    }
    if (*have)
      return ts_diag_path_error(h->diag, h->path, TS_ERR_PARSE, "bad header: key '%.*s' appears twice", (int)klen, key);
    *have = true;
    if (eat(h, '}')) break;
    if (!eat(h, ',')) return hdr_expected(h, "',' or '}' after a value");
  }
  skip_ws(h);
  if (h->p < h->end) return hdr_expected(h, "nothing after the closing '}'");
  if (!h->have_descr) return ts_diag_path_error(h->diag, h->path, TS_ERR_PARSE, "bad header: no 'descr' key");
  if (!h->have_fortran) return ts_diag_path_error(h->diag, h->path, TS_ERR_PARSE, "bad header: no 'fortran_order' key");
  if (!h->have_shape) return ts_diag_path_error(h->diag, h->path, TS_ERR_PARSE, "bad header: no 'shape' key");
  return TS_OK;
}

/* Maps a dtype string ("<f4", ">i8", "|b1") to an element type and whether
 * the data must be byteswapped. */
static ts_status_t parse_descr(hdr_t *h, ts_elem_t *elem, bool *swap) {
  const char *d = h->descr;
  char order = '=';
  if (*d == '<' || *d == '>' || *d == '=' || *d == '|') order = *d++;
  char kind = *d ? *d++ : 0;
  int size = 0;
  const char *digits = d;
  while (*d >= '0' && *d <= '9' && size < 1000) size = size * 10 + (*d++ - '0');
  if (kind && d > digits && !*d)
    for (size_t i = 0; i < NDTYPES; i++)
      if (DTYPES[i].kind == kind && DTYPES[i].size == size) {
        *elem = DTYPES[i].elem;
        *swap = order == '>' && size > 1;
        return TS_OK;
      }
  return ts_diag_path_error(h->diag, h->path, TS_ERR_PARSE, "unsupported dtype '%s'", h->descr);
}

/* ---- reading ------------------------------------------------------------ */

static void byteswap(void *data, int64_t count, ts_elem_t elem) {
  /* complex: each of the two parts swaps on its own */
  size_t w = elem == TS_C64 ? 4 : elem == TS_C128 ? 8 : elem_size(elem);
  size_t n = (size_t)count * elem_size(elem) / w;
  unsigned char *p = data;
  for (size_t i = 0; i < n; i++, p += w)
    for (size_t a = 0, b = w - 1; a < b; a++, b--) {
      unsigned char t = p[a];
      p[a] = p[b];
      p[b] = t;
    }
}

/* Column-major (fortran_order) to row-major. */
static ts_status_t fortran_to_c(ts_npy_array_t *a) {
  if (a->rank < 2 || a->count == 0) return TS_OK;
  size_t es = elem_size(a->elem);
  unsigned char *dst = ts_malloc(a->nbytes);
  if (!dst) return TS_ERR_NOMEM;
  int64_t fstride[TS_NPY_MAX_RANK], idx[TS_NPY_MAX_RANK] = {0};
  int64_t s = 1;
  for (int k = 0; k < a->rank; k++) {
    fstride[k] = s;
    s *= a->dims[k];
  }
  const unsigned char *src = a->data;
  int64_t off = 0; /* source element of the row-major index idx */
  for (int64_t i = 0; i < a->count; i++) {
    memcpy(dst + (size_t)i * es, src + (size_t)off * es, es);
    for (int k = a->rank - 1; k >= 0; k--) {
      off += fstride[k];
      if (++idx[k] < a->dims[k]) break;
      off -= fstride[k] * a->dims[k];
      idx[k] = 0;
    }
  }
  ts_free(a->data);
  a->data = dst;
  return TS_OK;
}

static uint32_t le16(const unsigned char *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8; }
static uint32_t le32(const unsigned char *p) { return le16(p) | le16(p + 2) << 16; }

void ts_npy_free(ts_npy_array_t *a) {
  if (!a) return;
  ts_free(a->data);
  memset(a, 0, sizeof *a);
}

ts_status_t ts_npy_read(const char *path, ts_npy_array_t *out, ts_diag_t *diag) {
  memset(out, 0, sizeof *out);
  ts_status_t st = TS_OK;
  char *htext = NULL;
  FILE *f = fopen(path, "rb");
  if (!f) {
    ts_diag_plain(diag, "cannot open '%s': %s", path, strerror(errno));
    return TS_ERR_INVALID_ARGUMENT;
  }
  struct stat sb;
  if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
    st = ts_diag_path_error(diag, path, TS_ERR_INVALID_ARGUMENT, "not a regular file");
    goto out_close;
  }
  uint64_t fsize = (uint64_t)sb.st_size;

  unsigned char pre[12];
  size_t got = fread(pre, 1, sizeof pre < fsize ? sizeof pre : (size_t)fsize, f);
  if (got < 8 || memcmp(pre, MAGIC, 6) != 0) {
    if (got >= 6 && memcmp(pre, MAGIC, 6) == 0) {
      st = ts_diag_path_error(diag, path, TS_ERR_PARSE, "file ends inside the header (%zu bytes)", got);
    } else if (got < 6 && memcmp(pre, MAGIC, got) == 0) {
      st = ts_diag_path_error(diag, path, TS_ERR_PARSE, "file ends inside the magic string (%zu bytes)", got);
    } else {
      st = ts_diag_path_error(diag, path, TS_ERR_PARSE, "not a .npy file (no \\x93NUMPY magic string)");
    }
    goto out_close;
  }
  int major = pre[6], minor = pre[7];
  if (!((major == 1 || major == 2 || major == 3) && minor == 0)) {
    st = ts_diag_path_error(diag, path, TS_ERR_PARSE, "unsupported .npy format version %d.%d", major, minor);
    goto out_close;
  }
  size_t lenbytes = major == 1 ? 2 : 4;
  if (got < 8 + lenbytes) {
    st = ts_diag_path_error(diag, path, TS_ERR_PARSE, "file ends inside the header (%zu bytes)", got);
    goto out_close;
  }
  uint64_t hlen = major == 1 ? le16(pre + 8) : le32(pre + 8);
  uint64_t hstart = 8 + lenbytes;
  if (hlen > TS_NPY_MAX_HEADER) {
    st = ts_diag_path_error(diag, path, TS_ERR_PARSE, "header length %llu exceeds the limit of %u bytes",
              (unsigned long long)hlen, TS_NPY_MAX_HEADER);
    goto out_close;
  }
  if (hstart + hlen > fsize) {
    st = ts_diag_path_error(diag, path, TS_ERR_PARSE, "header length %llu runs past the end of the file (%llu bytes)",
              (unsigned long long)hlen, (unsigned long long)fsize);
    goto out_close;
  }
  htext = ts_malloc((size_t)hlen + 1);
  if (!htext) {
    st = TS_ERR_NOMEM;
    goto out_close;
  }
  /* the first bytes of the header may already be in pre[] */
  size_t have = got - (size_t)hstart;
  if (have > hlen) have = (size_t)hlen;
  memcpy(htext, pre + hstart, have);
  if (fseek(f, (long)(hstart + have), SEEK_SET) != 0 ||
      fread(htext + have, 1, (size_t)hlen - have, f) != (size_t)hlen - have) {
    st = ts_diag_path_error(diag, path, TS_ERR_INVALID_ARGUMENT, "cannot read the header");
    goto out_free;
  }
  htext[hlen] = 0;

  hdr_t h = {.path = path, .p = htext, .end = htext + hlen, .diag = diag};
  TS_CHECK_GOTO(parse_header(&h), st, out_free);
  bool swap = false;
  TS_CHECK_GOTO(parse_descr(&h, &out->elem, &swap), st, out_free);

  /* element count and byte size, overflow-checked */
  size_t es = elem_size(out->elem);
  uint64_t count = 1;
  for (int k = 0; k < h.rank; k++) {
    uint64_t d = (uint64_t)h.dims[k];
    if (d != 0 && count > (uint64_t)INT64_MAX / d) {
      count = UINT64_MAX;
      break;
    }
    count *= d;
  }
  if (count == UINT64_MAX || count > SIZE_MAX / es) {
    st = ts_diag_path_error(diag, path, TS_ERR_PARSE, "shape has too many elements (the size overflows 64 bits)");
    goto out_free;
  }
  uint64_t nbytes = count * es;
  uint64_t data_start = hstart + hlen;
  uint64_t avail = fsize - data_start;
  if (nbytes != avail) {
    st = ts_diag_path_error(diag, path, TS_ERR_PARSE, "header says %llu bytes of data, file has %llu",
              (unsigned long long)nbytes, (unsigned long long)avail);
    goto out_free;
  }
  /* nbytes now equals what the file really holds: safe to allocate */
  out->data = ts_malloc(nbytes ? (size_t)nbytes : 1);
  if (!out->data) {
    st = ts_diag_path_error(diag, path, TS_ERR_NOMEM, "out of memory for %llu bytes of data", (unsigned long long)nbytes);
    goto out_free;
  }
  if (fread(out->data, 1, (size_t)nbytes, f) != nbytes) {
    st = ts_diag_path_error(diag, path, TS_ERR_INVALID_ARGUMENT, "cannot read the data (file changed while read?)");
    goto out_free;
  }
  out->rank = h.rank;
  memcpy(out->dims, h.dims, sizeof(int64_t) * (size_t)h.rank);
  out->count = (int64_t)count;
  out->nbytes = (size_t)nbytes;
  if (swap) byteswap(out->data, out->count, out->elem);
  if (h.fortran) TS_CHECK_GOTO(fortran_to_c(out), st, out_free);

out_free:
  ts_free(htext);
out_close:
  fclose(f);
  if (st < 0) ts_npy_free(out);
  return st;
}

/* Converts a just-read array (its type one of numpy's) to `want`. */
static ts_status_t convert_in(const char *path, ts_npy_array_t *a, ts_elem_t want, ts_diag_t *diag) {
  if (a->elem == want) return TS_OK;
  const char *have = ts_npy_descr(a->elem);
  ts_elem_t fe;
  bool upcast = file_elem(want, &fe) && fe == TS_F32 && want != TS_F32;
  /* Raw bits: bf16 as <u2, the 8-bit and smaller floats as u1 (one per byte). */
  if (upcast && a->elem == (ts_elem_bits(want) == 16 ? TS_U16 : TS_U8)) {
    a->elem = want;
    a->nbytes = (size_t)a->count * elem_size(want);
    return TS_OK;
  }
  if (upcast && a->elem == TS_F32) { /* rounded to nearest even */
    void *dst = ts_malloc((size_t)a->count * elem_size(want));
    if (!dst) return TS_ERR_NOMEM;
    ts_status_t st = ts_elem_convert(TS_F32, a->data, want, dst, a->count);
    if (st < 0) {
      ts_free(dst);
      return st;
    }
    ts_free(a->data);
    a->data = dst;
    a->elem = want;
    a->nbytes = (size_t)a->count * elem_size(want);
    return TS_OK;
  }
  int bits = subbyte_int_bits(want);
  bool want_signed = ts_elem_is_signed_int(want);
  if (bits && a->elem == (want_signed ? TS_S8 : TS_U8)) {
    int lo = want_signed ? -(1 << (bits - 1)) : 0;
    int hi = want_signed ? (1 << (bits - 1)) - 1 : (1 << bits) - 1;
    for (int64_t i = 0; i < a->count; i++) {
      int v = want_signed ? ((int8_t *)a->data)[i] : ((uint8_t *)a->data)[i];
      if (v < lo || v > hi)
        return ts_diag_path_error(diag, path, TS_ERR_PARSE, "value %d at index %lld does not fit in %s", v,
                    (long long)i, ts_elem_name(want));
    }
    a->elem = want;
    return TS_OK;
  }
  return ts_diag_path_error(diag, path, TS_ERR_PARSE, "dtype '%s' (%s) where %s is expected", have,
              ts_elem_name(a->elem), ts_elem_name(want));
}

ts_status_t ts_npy_read_as(const char *path, ts_elem_t want, ts_npy_array_t *out, ts_diag_t *diag) {
  TS_CHECK(ts_npy_read(path, out, diag));
  ts_status_t st = convert_in(path, out, want, diag);
  if (st < 0) ts_npy_free(out);
  return st;
}

/* ---- writing ------------------------------------------------------------ */

/* Header as numpy writes it: dict, spaces, '\n', the whole prefix a multiple
 * of 64 bytes. Version 1.0 unless the length does not fit in 16 bits. */
static ts_status_t build_header(ts_buf_t *b, const char *descr, int rank, const int64_t *dims) {
  ts_buf_t d = {0};
  ts_buf_printf(&d, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
  for (int k = 0; k < rank; k++) ts_buf_printf(&d, k ? ", %lld" : "%lld", (long long)dims[k]);
  ts_buf_puts(&d, rank == 1 ? ",), }" : "), }");
  if (d.oom) {
    ts_buf_free(&d);
    return TS_ERR_NOMEM;
  }
  /* 64 dimensions of 19 digits stay far below 64 KiB, so 2.0 is for safety */
  int major = 1;
  size_t pre = 10;
  if ((pre + d.len + 1 + 63) / 64 * 64 - pre > 65535) {
    major = 2;
    pre = 12;
  }
  size_t total = (pre + d.len + 1 + 63) / 64 * 64;
  size_t hlen = total - pre;
  ts_buf_append(b, MAGIC, 6);
  ts_buf_putc(b, (char)major);
  ts_buf_putc(b, 0);
  for (size_t i = 0; i < pre - 8; i++) ts_buf_putc(b, (char)(hlen >> (8 * i) & 0xff));
  ts_buf_append(b, d.data, d.len);
  while (b->len < total - 1) ts_buf_putc(b, ' ');
  ts_buf_putc(b, '\n');
  ts_buf_free(&d);
  return b->oom ? TS_ERR_NOMEM : TS_OK;
}

/* Writes `count` elements converted to their file type, a chunk at a time. */
static bool write_data(FILE *f, ts_elem_t elem, const void *data, int64_t count) {
  ts_elem_t fe = elem;
  file_elem(elem, &fe);
  size_t es = elem_size(elem), fs = elem_size(fe);
  if (fe == elem) return fwrite(data, es, (size_t)count, f) == (size_t)count;
  unsigned char chunk[16384];
  const unsigned char *src = data;
  int64_t per_chunk = (int64_t)(sizeof chunk / fs);
  for (int64_t i = 0; i < count; i += per_chunk) {
    int64_t n = count - i < per_chunk ? count - i : per_chunk;
    if (ts_elem_convert(elem, src + (size_t)i * es, fe, chunk, n) != TS_OK) return false;
    if (fwrite(chunk, fs, (size_t)n, f) != (size_t)n) return false;
  }
  return true;
}

ts_status_t ts_npy_write_file(FILE *f, const char *path, ts_elem_t elem, int rank, const int64_t *dims,
                              const void *data, ts_diag_t *diag) {
  const char *descr = ts_npy_descr(elem);
  if (!descr)
    return ts_diag_path_error(diag, path, TS_ERR_INVALID_ARGUMENT, "cannot write %s to .npy", ts_elem_name(elem));
  if (rank < 0 || rank > TS_NPY_MAX_RANK || (rank > 0 && !dims))
    return ts_diag_path_error(diag, path, TS_ERR_INVALID_ARGUMENT, "bad rank %d", rank);
  int64_t count = 1;
  for (int k = 0; k < rank; k++) {
    if (dims[k] < 0) return ts_diag_path_error(diag, path, TS_ERR_INVALID_ARGUMENT, "negative dimension %lld", (long long)dims[k]);
    if (dims[k] && count > INT64_MAX / 16 / dims[k])
      return ts_diag_path_error(diag, path, TS_ERR_INVALID_ARGUMENT, "shape has too many elements");
    count *= dims[k];
  }
  if (count > 0 && !data) return ts_diag_path_error(diag, path, TS_ERR_INVALID_ARGUMENT, "no data");

  ts_buf_t hdr = {0};
  ts_status_t st = build_header(&hdr, descr, rank, dims);
  if (st == TS_OK) {
    errno = 0;
    /* A failed write leaves f's error flag and errno for the close to report. */
    if (fwrite(hdr.data, 1, hdr.len, f) == hdr.len && !write_data(f, elem, data, count) && !ferror(f))
      st = ts_diag_path_error(diag, path, TS_ERR_INVALID_ARGUMENT, "cannot convert %s", ts_elem_name(elem));
  }
  ts_buf_free(&hdr);
  return st;
}

ts_status_t ts_npy_write(const char *path, ts_elem_t elem, int rank, const int64_t *dims,
                         const void *data, ts_diag_t *diag) {
  ts_atomic_file_t af;
  TS_CHECK(ts_atomic_file_open(&af, path, diag));
  ts_status_t st = ts_npy_write_file(af.f, path, elem, rank, dims, data, diag);
  ts_status_t cst = ts_atomic_file_close(&af, st == TS_OK, diag);
  return st != TS_OK ? st : cst;
}
