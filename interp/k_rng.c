/* Kernels: random numbers. rng-bit-generator is bit-exact with what XLA's
 * RngBitGeneratorExpander builds (xla/service/rng_bit_generator_expander.cc
 * over xla/hlo/builder/lib/prng.cc); `rng`, whose values XLA leaves to the
 * implementation, is deterministic and counter-based here.
 *
 * Both block functions are counter-based (Salmon et al., "Parallel random
 * numbers: as easy as 1, 2, 3", SC'11, with Random123's constants): a block's
 * bits depend only on the key and the counter, so any slice of the output
 * can be computed on its own from the element indices it covers. */
#include "interp_internal.h"

#include <math.h>
#include <string.h>

/* ---- block functions ------------------------------------------------------ */

static inline uint32_t rotl32(uint32_t v, int r) { return (v << r) | (v >> (32 - r)); }

/* Threefry-2x32, 20 rounds (Random123 threefry2x32_R(20, ...)): the key
 * schedule ks[2] = 0x1BD11BDA ^ k0 ^ k1, a key injection after every 4
 * rounds with the injection count added to the second word. */
static void threefry2x32(uint32_t k0, uint32_t k1, uint32_t x[2]) {
  static const int rot[8] = {13, 15, 26, 6, 17, 29, 16, 24};
  const uint32_t ks[3] = {k0, k1, 0x1BD11BDAu ^ k0 ^ k1};
  uint32_t x0 = x[0] + ks[0], x1 = x[1] + ks[1];
  for (int s = 0; s < 5; s++) {
    for (int r = 0; r < 4; r++) {
      x0 += x1;
      x1 = rotl32(x1, rot[(s & 1) * 4 + r]) ^ x0;
    }
    x0 += ks[(s + 1) % 3];
    x1 += ks[(s + 2) % 3] + (uint32_t)(s + 1);
  }
  x[0] = x0;
  x[1] = x1;
}

/* Philox-4x32, 10 rounds (Random123 philox4x32_R(10, ...)): the key bumps
 * by the Weyl constants before every round but the first. */
static void philox4x32(uint32_t k0, uint32_t k1, uint32_t c[4]) {
  for (int r = 0; r < 10; r++) {
    if (r) {
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    uint64_t p0 = (uint64_t)0xD2511F53u * c[0], p1 = (uint64_t)0xCD9E8D57u * c[2];
    uint32_t n0 = (uint32_t)(p1 >> 32) ^ c[1] ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c[3] ^ k1;
    c[0] = n0;
    c[1] = (uint32_t)p1;
    c[2] = n2;
    c[3] = (uint32_t)p0;
  }
}

/* ---- rng-bit-generator ------------------------------------------------------ */
/*
 * What XLA's expander computes, followed here exactly:
 *   state u64[2] = {key, counter} for ThreeFry; {key, counter_lo[, counter_hi]}
 *   for Philox. The key splits into two u32 words, low word first
 *   (prng.cc Uint64ToUint32s). The result is (new state, bits); the key
 *   is carried over unchanged.
 *
 *   ThreeFry, 64-bit outputs (u64/s64/f64): element i = block(counter + i),
 *   the block's input words being (counter + i) low then high; its output
 *   words x0 | x1 << 32. New counter: counter + n.
 *   ThreeFry, 32-bit outputs: h = ceil(n / 2) blocks on counters counter + j;
 *   the first words fill elements 0..h-1 and the second words elements
 *   h..n-1 (ThreeFryRngBit32 concatenates the two output halves). New
 *   counter: counter + h.
 *   Philox, 32-bit outputs: ceil(n / 4) blocks on the 128-bit counter
 *   (lo, hi) + j, as four words lo.low, lo.high, hi.low, hi.high; block j
 *   fills elements 4j..4j+3 in word order. 64-bit outputs: ceil(n / 2)
 *   blocks, block j giving w0 | w1 << 32 and w2 | w3 << 32 to elements 2j
 *   and 2j+1. New counter: counter + blocks, with the carry into hi.
 *   8- and 16-bit outputs (both algorithms): the 32-bit generation on the
 *   same shape, each element truncated to its low bits (the expander's
 *   *RngBitNarrow: convert to u8/u16, then bitcast).
 *   Floating outputs are the same bits bitcast (f16/bf16/f32/f64/f8).
 *
 * Choices where XLA's behaviour is backend-specific or unclear to us:
 *   rng_default runs ThreeFry (what the team's XLA CPU reference uses).
 *   Philox with a u64[2] state takes counter_hi = 0 and stores back only
 *   the low 64 bits of the new counter.
 */

typedef enum { ALG_THREEFRY, ALG_PHILOX } rng_alg_t;

/* Element k of a 8/16/32-bit output. */
static inline void put_narrow(void *d, int w, int64_t k, uint32_t v) {
  if (w == 32)
    ((uint32_t *)d)[k] = v;
  else if (w == 16)
    ((uint16_t *)d)[k] = (uint16_t)v;
  else
    ((uint8_t *)d)[k] = (uint8_t)v;
}

/* Returns the new counter. */
static uint64_t threefry_fill(uint64_t key, uint64_t ctr, int w, void *d, int64_t n) {
  uint32_t k0 = (uint32_t)key, k1 = (uint32_t)(key >> 32);
  if (w == 64) {
    uint64_t *o = d;
    for (int64_t i = 0; i < n; i++) {
      uint64_t c = ctr + (uint64_t)i;
      uint32_t x[2] = {(uint32_t)c, (uint32_t)(c >> 32)};
      threefry2x32(k0, k1, x);
      o[i] = x[0] | (uint64_t)x[1] << 32;
    }
    return ctr + (uint64_t)n;
  }
  int64_t h = (n + 1) / 2;
  for (int64_t j = 0; j < h; j++) {
    uint64_t c = ctr + (uint64_t)j;
    uint32_t x[2] = {(uint32_t)c, (uint32_t)(c >> 32)};
    threefry2x32(k0, k1, x);
    put_narrow(d, w, j, x[0]);
    if (h + j < n) put_narrow(d, w, h + j, x[1]);
  }
  return ctr + (uint64_t)h;
}

/* Advances the 128-bit counter (lo, hi) by `blocks`. */
static void philox_fill(uint64_t key, uint64_t *lo, uint64_t *hi, int w, void *d, int64_t n) {
  uint32_t k0 = (uint32_t)key, k1 = (uint32_t)(key >> 32);
  int per = w == 64 ? 2 : 4;
  int64_t blocks = (n + per - 1) / per;
  for (int64_t j = 0; j < blocks; j++) {
    uint64_t cl = *lo + (uint64_t)j, ch = *hi + (cl < *lo); /* j < 2^63: one carry at most */
    uint32_t c[4] = {(uint32_t)cl, (uint32_t)(cl >> 32), (uint32_t)ch, (uint32_t)(ch >> 32)};
    philox4x32(k0, k1, c);
    if (w == 64) {
      uint64_t *o = d;
      o[2 * j] = c[0] | (uint64_t)c[1] << 32;
      if (2 * j + 1 < n) o[2 * j + 1] = c[2] | (uint64_t)c[3] << 32;
    } else {
      for (int q = 0; q < 4 && 4 * j + q < n; q++) put_narrow(d, w, 4 * j + q, c[q]);
    }
  }
  uint64_t nl = *lo + (uint64_t)blocks;
  *hi += nl < *lo;
  *lo = nl;
}

static ts_status_t k_rng_bit_generator(ts_kernel_ctx_t *ctx, const ts_hlo_instr_t *instr, const ts_array_t *in,
                                       int nin, ts_array_t *out, int nout) {
  const ts_hlo_attr_t *a = ts_hlo_instr_attr(instr, "algorithm");
  const char *name = a && a->kind == TS_ATTR_IDENT ? a->v.s : "rng_default";
  rng_alg_t alg;
  if (strcmp(name, "rng_three_fry") == 0 || strcmp(name, "rng_default") == 0)
    alg = ALG_THREEFRY;
  else if (strcmp(name, "rng_philox") == 0)
    alg = ALG_PHILOX;
  else
    return ts_kernel_fail(ctx, instr, TS_ERR_INVALID_ARGUMENT, "unknown algorithm %s", name);
  const ts_array_t *st = &in[0];
  int64_t ns = ts_array_count(st);
  if (st->elem != TS_U64 || st->rank != 1 || !(ns == 2 || (alg == ALG_PHILOX && ns == 3)))
    return ts_kernel_fail(ctx, instr, TS_ERR_INVALID_ARGUMENT,
                          "%s needs a u64[2] state%s, got %s with %lld elements", name,
                          alg == ALG_PHILOX ? " or u64[3]" : "", ts_elem_name(st->elem), (long long)ns);
  if (nout != 2) return ts_kernel_fail(ctx, instr, TS_ERR_INVALID_ARGUMENT, "the result must be (state, bits)");
  ts_array_t *bits = &out[1];
  int w = ts_elem_bits(bits->elem);
  if (ts_elem_is_complex(bits->elem) || bits->elem == TS_PRED || (w != 8 && w != 16 && w != 32 && w != 64))
    return ts_kernel_fail(ctx, instr, TS_ERR_INVALID_ARGUMENT, "cannot generate %s random bits",
                          ts_elem_name(bits->elem));
  uint64_t s[3] = {0, 0, 0};
  memcpy(s, st->data, (size_t)ns * 8);
  int64_t n = ts_array_count(bits);
  if (alg == ALG_THREEFRY) {
    s[1] = threefry_fill(s[0], s[1], w, bits->data, n);
  } else {
    uint64_t hi = ns == 3 ? s[2] : 0;
    philox_fill(s[0], &s[1], &hi, w, bits->data, n);
    s[2] = hi;
  }
  memcpy(out[0].data, s, (size_t)ns * 8);
  return TS_OK;
}

/* ---- rng ------------------------------------------------------------------------ */
/*
 * XLA leaves rng's values to the implementation. Here they are a function of
 * the instruction's name and the element's row-major index only: the key is
 * RNG_SEED mixed with an FNV-1a hash of the name, and element i draws
 * Threefry-2x32 blocks on counter i (a second key for the second pair of
 * words). Runs are reproducible, and a slice can be recomputed from the
 * global indices it covers.
 *   rng_uniform(a, b): floats a + (b - a) * u with u in [0, 1) (53 bits for
 *   f64, 24 otherwise), kept below b after rounding; integers a + r mod
 *   (b - a). b <= a gives a.
 *   rng_normal(mu, sigma): mu + sigma * z, z by Box-Muller from two uniforms.
 */

#define RNG_SEED UINT64_C(0x7e55e4a5eed5eed5) /* module-wide */

static uint64_t rng_key(const ts_hlo_instr_t *instr) {
  uint64_t h = UINT64_C(0xcbf29ce484222325);
  for (const char *p = instr->name ? instr->name : ""; *p; p++) h = (h ^ (uint8_t)*p) * UINT64_C(0x100000001b3);
  return h ^ RNG_SEED;
}

/* 64 random bits for element i, from the pair `which` (0 or 1). */
static uint64_t rng_bits(uint64_t key, int64_t i, int which) {
  if (which) key ^= UINT64_C(0x9e3779b97f4a7c15);
  uint32_t x[2] = {(uint32_t)(uint64_t)i, (uint32_t)((uint64_t)i >> 32)};
  threefry2x32((uint32_t)key, (uint32_t)(key >> 32), x);
  return x[0] | (uint64_t)x[1] << 32;
}

/* In [0, 1) with 53 (f64) or 24 random bits: exact in the type. */
static double unit(uint64_t r, bool f64) { return f64 ? (double)(r >> 11) * 0x1p-53 : (double)(r >> 40) * 0x1p-24; }

static ts_status_t k_rng(ts_kernel_ctx_t *ctx, const ts_hlo_instr_t *instr, const ts_array_t *in, int nin,
                         ts_array_t *out, int nout) {
  const ts_hlo_attr_t *da = ts_hlo_instr_attr(instr, "distribution");
  const char *dist = da && da->kind == TS_ATTR_IDENT ? da->v.s : "";
  bool normal = strcmp(dist, "rng_normal") == 0;
  if (!normal && strcmp(dist, "rng_uniform") != 0)
    return ts_kernel_fail(ctx, instr, TS_ERR_INVALID_ARGUMENT, "unknown distribution '%s'", dist);
  ts_elem_t t = out[0].elem;
  int64_t n = ts_array_count(&out[0]);
  uint64_t key = rng_key(instr);
  void *o = out[0].data;
  if (ts_elem_is_float(t)) {
    bool f64 = t == TS_F64;
    double a = ts_load_f(t, in[0].data, 0), b = ts_load_f(t, in[1].data, 0);
    for (int64_t i = 0; i < n; i++) {
      double u = unit(rng_bits(key, i, 0), f64), v;
      if (normal) {
        double u1 = 1 - u; /* (0, 1] */
        double u2 = unit(rng_bits(key, i, 1), f64);
        v = a + b * sqrt(-2 * log(u1)) * cos(6.283185307179586 * u2);
      } else {
        v = b > a ? a + (b - a) * u : a;
      }
      ts_store_f(t, o, i, v);
      if (!normal && b > a && ts_load_f(t, o, i) >= b) ts_store_f(t, o, i, a); /* rounded up to b */
    }
    return TS_OK;
  }
  if (normal || !ts_elem_is_int(t))
    return ts_kernel_fail(ctx, instr, TS_ERR_INVALID_ARGUMENT, "%s is not supported for %s", dist, ts_elem_name(t));
  bool sgn = ts_elem_is_signed_int(t);
  int64_t a = ts_load_i(t, in[0].data, 0), b = ts_load_i(t, in[1].data, 0);
  bool ok = sgn ? b > a : (uint64_t)b > (uint64_t)a;
  uint64_t range = ok ? (uint64_t)b - (uint64_t)a : 0;
  for (int64_t i = 0; i < n; i++)
    ts_store_i(t, o, i, range ? (int64_t)((uint64_t)a + rng_bits(key, i, 0) % range) : a);
  return TS_OK;
}

void ts_kernels_rng(ts_kernel_fn *table) {
  table[TS_OP_RNG_BIT_GENERATOR] = k_rng_bit_generator;
  table[TS_OP_RNG] = k_rng;
}
