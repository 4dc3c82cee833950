/* Kernels: random numbers. rng-bit-generator computes what XLA's
 * RngBitGeneratorExpander builds (xla/service/rng_bit_generator_expander.cc
 * over xla/hlo/builder/lib/prng.cc), as we read that code: the block
 * functions are pinned by Random123's known-answer vectors, the layout has
 * not been compared with an XLA run. `rng`, whose values XLA leaves to the
 * implementation, is deterministic and counter-based here.
 *
 * Both block functions are counter-based (Salmon et al., "Parallel random
 * numbers: as easy as 1, 2, 3", SC'11, with Random123's constants): a block's
 * bits depend only on the key and the counter, so any slice of the output
 * can be computed on its own from the element indices it covers. */
#include "kernels_internal.h"

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
 * What XLA's RngBitGeneratorExpander builds, followed here (from our reading
 * of rng_bit_generator_expander.cc and prng.cc; XLA's docs only say the
 * output is a deterministic function of the state):
 *
 *   The key is state[0], split into two u32 words low word first
 *   (prng.cc Uint64ToUint32s); the result is (new state, bits) with the key
 *   carried over unchanged. Counters are split the same way (low, high).
 *
 *   ThreeFry (state u64[2] = {key, counter}):
 *   - 64-bit outputs (u64/s64/f64; ThreeFryRngBit64): element i (row-major)
 *     is the block on counter + i, as x0 | x1 << 32. New counter: + n.
 *   - 32-bit outputs (ThreeFryRngBit32): the shape is split in halves along
 *     one dimension s (SplitShapeIntoHalves: the first even dimension, else
 *     the first largest; a scalar counts as [1]). The half shape has d_s ->
 *     ceil(d_s / 2); its elements take counters counter + 0, 1, ... in
 *     row-major order, and the two words of half element (.., m, ..) go to
 *     (.., 2m, ..) and (.., 2m + 1, ..) (CombineShapePair concatenates on a
 *     new size-1 dimension after s and reshapes; an odd tail is sliced off).
 *     New counter: + elements of the half shape.
 *   Philox (PhiloxRngBit32/64): a 128-bit counter (lo, hi). With a u64[3]
 *   state it is {key, lo, hi}. With u64[2] the expander reverses the whole
 *   state (GetPhiloxStateOp), so lo = state[1] and hi = state[0] (the key),
 *   and only the new lo is stored back (GetPhiloxOutputStateOp).
 *   - 32-bit outputs: ceil(n / 4) blocks on counters (lo, hi) + j; block j's
 *     words fill elements 4j..4j+3 in order.
 *   - 64-bit outputs: ceil(n / 2) blocks; block j gives w0 | w1 << 32 to
 *     element 2j and w2 | w3 << 32 to element 2j + 1.
 *   New counter: + blocks, with the carry into hi.
 *   8- and 16-bit outputs (both algorithms; *RngBitNarrow): the 32-bit
 *   generation on the same shape, each element truncated to its low bits.
 *   Floating outputs are the same bits (bitcast).
 *
 * Where we had to decide:
 *   rng_default runs Philox, as XLA's CPU and GPU compilers expand it
 *   (RngBitGeneratorExpander(RNG_PHILOX)); JAX's u64[2] states under the
 *   default algorithm are why the reversed u64[2] Philox path exists.
 *   RNG_DEFAULT_ALG below is the one place.
 *   The 32-bit ThreeFry interleave is that of current XLA (the concat on a
 *   trivial dimension); older XLA concatenated the halves end to end along
 *   s. Sub-byte outputs (s4/u4, f4) and pred are refused.
 *
 * Every element's bits depend only on key, counter and its index, so a
 * shard can be recomputed from the global indices it covers.
 */

typedef enum { ALG_THREEFRY, ALG_PHILOX } rng_alg_t;

#define RNG_DEFAULT_ALG ALG_PHILOX

/* Element k of a 8/16/32-bit output. */
static inline void put_narrow(void *d, int w, int64_t k, uint32_t v) {
  if (w == 32)
    ((uint32_t *)d)[k] = v;
  else if (w == 16)
    ((uint16_t *)d)[k] = (uint16_t)v;
  else
    ((uint8_t *)d)[k] = (uint8_t)v;
}

static inline void threefry_at(uint32_t k0, uint32_t k1, uint64_t c, uint32_t x[2]) {
  x[0] = (uint32_t)c;
  x[1] = (uint32_t)(c >> 32);
  threefry2x32(k0, k1, x);
}

/* ThreeFryRngBit64. Returns the new counter. */
static uint64_t threefry_fill64(uint64_t key, uint64_t ctr, uint64_t *o, int64_t n) {
  uint32_t k0 = (uint32_t)key, k1 = (uint32_t)(key >> 32), x[2];
  for (int64_t i = 0; i < n; i++) {
    threefry_at(k0, k1, ctr + (uint64_t)i, x);
    o[i] = x[0] | (uint64_t)x[1] << 32;
  }
  return ctr + (uint64_t)n;
}

/* ThreeFryRngBit32 (and Narrow) on the shape `dims`. Returns the new counter. */
static uint64_t threefry_fill32(uint64_t key, uint64_t ctr, int w, void *d, int rank, const int64_t *dims) {
  uint32_t k0 = (uint32_t)key, k1 = (uint32_t)(key >> 32), x[2];
  if (rank == 0) {
    threefry_at(k0, k1, ctr, x);
    put_narrow(d, w, 0, x[0]);
    return ctr + 1;
  }
  int s = -1;
  for (int i = 0; i < rank && s < 0; i++)
    if (dims[i] % 2 == 0) s = i;
  if (s < 0)
    for (int i = 0; i < rank; i++)
      if (s < 0 || dims[i] > dims[s]) s = i;
  int64_t outer = 1, inner = 1, ds = dims[s], hs = (ds + 1) / 2;
  for (int i = 0; i < s; i++) outer *= dims[i];
  for (int i = s + 1; i < rank; i++) inner *= dims[i];
  uint64_t c = ctr;
  for (int64_t o = 0; o < outer; o++)
    for (int64_t m = 0; m < hs; m++) {
      int64_t base = (o * ds + 2 * m) * inner;
      bool second = 2 * m + 1 < ds;
      for (int64_t k = 0; k < inner; k++) {
        threefry_at(k0, k1, c++, x);
        put_narrow(d, w, base + k, x[0]);
        if (second) put_narrow(d, w, base + inner + k, x[1]);
      }
    }
  return c;
}

/* PhiloxRngBit32/64 (and Narrow). Advances the 128-bit counter (lo, hi). */
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
  if (strcmp(name, "rng_default") == 0)
    alg = RNG_DEFAULT_ALG;
  else if (strcmp(name, "rng_three_fry") == 0)
    alg = ALG_THREEFRY;
  else if (strcmp(name, "rng_philox") == 0)
    alg = ALG_PHILOX;
  else
    return ts_kernel_fail(ctx, instr, TS_ERR_INVALID_ARGUMENT, "unknown algorithm %s", name);
  const ts_array_t *st = &in[0];
  int64_t ns = ts_array_count(st);
  if (st->elem != TS_U64 || st->rank != 1 || !(ns == 2 || (alg == ALG_PHILOX && ns == 3)))
    return ts_kernel_fail(ctx, instr, TS_ERR_INVALID_ARGUMENT, "%s needs a u64[2]%s state, got %s[%lld]", name,
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
    s[1] = w == 64 ? threefry_fill64(s[0], s[1], bits->data, n)
                   : threefry_fill32(s[0], s[1], w, bits->data, bits->rank, bits->dims);
  } else {
    uint64_t lo = s[1], hi = ns == 3 ? s[2] : s[0];
    philox_fill(s[0], &lo, &hi, w, bits->data, n);
    s[1] = lo;
    s[2] = hi; /* not stored back for u64[2] */
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
 *   f64, 24 otherwise); a value that rounds up to b in the output type
 *   becomes the type's largest value below b. Integers a + r mod (b - a)
 *   (r 64 bits: the bias is below range / 2^64). b <= a gives a.
 *   rng_normal(mu, sigma): mu + sigma * z, z by Box-Muller from two uniforms.
 * So an rng inside a loop body draws the same values on every trip: XLA's
 * values there come from a hidden global state (RngExpander), which a
 * stateless kernel cannot have.
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

/* Element i := the largest value of float type t below b (b a value of t):
 * float formats are sign-magnitude, so that is one step of the bit pattern
 * toward -inf. Little-endian storage, as everywhere in kernels/. */
static void store_below(ts_elem_t t, void *o, int64_t i, double b) {
  size_t sz = (size_t)ts_elem_storage_bytes(t);
  char *e = (char *)o + (size_t)i * sz;
  uint64_t p = 0;
  ts_store_f(t, o, i, b);
  memcpy(&p, e, sz);
  if (b > 0)
    p -= 1;
  else if (b < 0)
    p += 1;
  else
    p = UINT64_C(1) << (ts_elem_bits(t) - 1) | 1; /* -(smallest subnormal) */
  memcpy(e, &p, sz);
}

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
      } else if (b > a) {
        v = isfinite(b - a) ? a + (b - a) * u : a * (1 - u) + b * u; /* no overflow for huge spans */
        if (v < a) v = a;
      } else {
        v = a;
      }
      ts_store_f(t, o, i, v);
      if (!normal && b > a && ts_load_f(t, o, i) >= b) store_below(t, o, i, b); /* rounded up to b */
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
