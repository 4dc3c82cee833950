/* Element-wise reduction kernels for the types collectives reduce in.
 * Narrow floats (bf16, f16, f8, f6, f4) reduce in f32 and sub-byte integers
 * in 32-bit integers: comm.c converts once before and once after. */
#include "coll_internal.h"

#include <string.h>

#if defined(__x86_64__)
#include <emmintrin.h>
#endif

ts_elem_t coll_reduce_type(ts_elem_t t) {
  switch (t) {
  case TS_S1:
  case TS_S2:
  case TS_S4: return TS_S32;
  case TS_U1:
  case TS_U2:
  case TS_U4: return TS_U32;
  case TS_F32:
  case TS_F64:
  case TS_C64:
  case TS_C128: return t;
  default: return ts_elem_is_storage_float(t) ? TS_F32 : t;
  }
}

bool coll_redop_ok(ts_elem_t t, ts_coll_redop_t op) {
  if ((unsigned)op >= TS_COLL_REDOP_COUNT || !ts_elem_is_array(t)) return false;
  if (ts_elem_is_complex(t)) return op == TS_COLL_SUM || op == TS_COLL_PROD;
  return true;
}

#define SUM(a, b) ((a) + (b))
#define PROD(a, b) ((a) * (b))
#define MIN(a, b) ((b) < (a) ? (b) : (a))
#define MAX(a, b) ((b) > (a) ? (b) : (a))

/* Two forms per kernel, both with non-aliasing pointers so that the
 * compiler vectorises them without run-time overlap checks: d = a op b, and
 * d op= b (accumulate). Signed sums/products go through the unsigned type:
 * they wrap like XLA, without undefined behaviour. */
#define KERNEL(T, UT, NAME, F)                                                                     \
  static void NAME(T *restrict d, const T *restrict a, const T *restrict b, size_t n) {           \
    for (size_t i = 0; i < n; i++) d[i] = F(a[i], b[i]);                                           \
  }                                                                                                \
  static void NAME##_acc(T *restrict d, const T *restrict b, size_t n) {                          \
    for (size_t i = 0; i < n; i++) d[i] = F(d[i], b[i]);                                           \
  }
#define WRAP_KERNEL(T, UT, NAME, F)                                                                \
  static void NAME(T *restrict d, const T *restrict a, const T *restrict b, size_t n) {           \
    for (size_t i = 0; i < n; i++) d[i] = (T)F((UT)a[i], (UT)b[i]);                                \
  }                                                                                                \
  static void NAME##_acc(T *restrict d, const T *restrict b, size_t n) {                          \
    for (size_t i = 0; i < n; i++) d[i] = (T)F((UT)d[i], (UT)b[i]);                                \
  }

#define FOUR(T, UT, SFX, WK)             \
  WK(T, UT, sum_##SFX, SUM)              \
  WK(T, UT, prod_##SFX, PROD)            \
  KERNEL(T, UT, min_##SFX, MIN)          \
  KERNEL(T, UT, max_##SFX, MAX)

FOUR(float, float, f32, KERNEL)
FOUR(double, double, f64, KERNEL)
FOUR(int8_t, uint8_t, s8, WRAP_KERNEL)
FOUR(int16_t, uint16_t, s16, WRAP_KERNEL)
FOUR(int32_t, uint32_t, s32, WRAP_KERNEL)
FOUR(int64_t, uint64_t, s64, WRAP_KERNEL)
FOUR(uint8_t, uint8_t, u8, WRAP_KERNEL)
FOUR(uint16_t, uint16_t, u16, WRAP_KERNEL)
FOUR(uint32_t, uint32_t, u32, WRAP_KERNEL)
FOUR(uint64_t, uint64_t, u64, WRAP_KERNEL)

static void pred_or(uint8_t *d, const uint8_t *a, const uint8_t *b, size_t n) {
  for (size_t i = 0; i < n; i++) d[i] = (uint8_t)((a[i] | b[i]) != 0);
}
static void pred_and(uint8_t *d, const uint8_t *a, const uint8_t *b, size_t n) {
  for (size_t i = 0; i < n; i++) d[i] = (uint8_t)(a[i] && b[i]);
}

#define COMPLEX(T, SFX)                                                                     \
  static void csum_##SFX(T *d, const T *a, const T *b, size_t n) {                          \
    for (size_t i = 0; i < 2 * n; i++) d[i] = a[i] + b[i];                                  \
  }                                                                                         \
  static void cprod_##SFX(T *d, const T *a, const T *b, size_t n) {                         \
    for (size_t i = 0; i < n; i++) {                                                        \
      T re = a[2 * i] * b[2 * i] - a[2 * i + 1] * b[2 * i + 1];                              \
      T im = a[2 * i] * b[2 * i + 1] + a[2 * i + 1] * b[2 * i];                              \
      d[2 * i] = re;                                                                        \
      d[2 * i + 1] = im;                                                                    \
    }                                                                                       \
  }
COMPLEX(float, c64)
COMPLEX(double, c128)

#define DISPATCH(SFX, T)                                                                         \
  switch (op) {                                                                                  \
  case TS_COLL_SUM:                                                                              \
    if (acc) sum_##SFX##_acc((T *)dst, (const T *)src, n);                                       \
    else sum_##SFX((T *)dst, (const T *)a, (const T *)b, n);                                     \
    return;                                                                                      \
  case TS_COLL_PROD:                                                                             \
    if (acc) prod_##SFX##_acc((T *)dst, (const T *)src, n);                                      \
    else prod_##SFX((T *)dst, (const T *)a, (const T *)b, n);                                    \
    return;                                                                                      \
  case TS_COLL_MIN:                                                                              \
    if (acc) min_##SFX##_acc((T *)dst, (const T *)src, n);                                       \
    else min_##SFX((T *)dst, (const T *)a, (const T *)b, n);                                     \
    return;                                                                                      \
  case TS_COLL_MAX:                                                                              \
    if (acc) max_##SFX##_acc((T *)dst, (const T *)src, n);                                       \
    else max_##SFX((T *)dst, (const T *)a, (const T *)b, n);                                     \
    return;                                                                                      \
  default: return;                                                                               \
  }

/* dst may be a or b exactly (in-place accumulation), never a partial overlap. */
void coll_reduce3(void *dst, const void *a, const void *b, size_t n, ts_elem_t type, ts_coll_redop_t op) {
  /* dst == a or dst == b: accumulate the other operand (every op commutes) */
  bool acc = dst == a || dst == b;
  const void *src = dst == a ? b : a;
  switch (type) {
  case TS_F32: DISPATCH(f32, float)
  case TS_F64: DISPATCH(f64, double)
  case TS_S8: DISPATCH(s8, int8_t)
  case TS_S16: DISPATCH(s16, int16_t)
  case TS_S32: DISPATCH(s32, int32_t)
  case TS_S64: DISPATCH(s64, int64_t)
  case TS_U8: DISPATCH(u8, uint8_t)
  case TS_U16: DISPATCH(u16, uint16_t)
  case TS_U32: DISPATCH(u32, uint32_t)
  case TS_U64: DISPATCH(u64, uint64_t)
  case TS_PRED:
    if (op == TS_COLL_SUM || op == TS_COLL_MAX) pred_or(dst, a, b, n);
    else pred_and(dst, a, b, n);
    return;
  case TS_C64:
    if (op == TS_COLL_SUM) csum_c64(dst, a, b, n);
    else cprod_c64(dst, a, b, n);
    return;
  case TS_C128:
    if (op == TS_COLL_SUM) csum_c128(dst, a, b, n);
    else cprod_c128(dst, a, b, n);
    return;
  default: TS_ASSERT(!"not a reduce type"); return;
  }
}

void coll_reduce(void *dst, const void *src, size_t n, ts_elem_t type, ts_coll_redop_t op) {
  coll_reduce3(dst, dst, src, n, type, op);
}

/* Streaming stores go around the caches: a copy whose output is larger than
 * them moves 2 bytes per byte instead of 3 (no read-for-ownership), which is
 * what memcpy itself does at these sizes. */
void coll_copy(void *restrict dst, const void *restrict src, size_t n, bool nt) {
#if defined(__x86_64__)
  if (nt && n >= 256) {
    char *d = dst;
    const char *s = src;
    size_t head = (16 - ((uintptr_t)d & 15)) & 15;
    memcpy(d, s, head);
    d += head, s += head, n -= head;
    __m128i *vd = (__m128i *)(void *)d;
    size_t k = n / 64;
    for (size_t i = 0; i < k; i++, s += 64) {
      __m128i a = _mm_loadu_si128((const __m128i *)(const void *)s);
      __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(s + 16));
      __m128i c = _mm_loadu_si128((const __m128i *)(const void *)(s + 32));
      __m128i e = _mm_loadu_si128((const __m128i *)(const void *)(s + 48));
      _mm_stream_si128(vd++, a);
      _mm_stream_si128(vd++, b);
      _mm_stream_si128(vd++, c);
      _mm_stream_si128(vd++, e);
    }
    memcpy(vd, s, n % 64);
    return;
  }
#endif
  (void)nt;
  memcpy(dst, src, n);
}

void coll_store_fence(void) {
#if defined(__x86_64__)
  _mm_sfence();
#else
  atomic_thread_fence(memory_order_seq_cst);
#endif
}

bool coll_sum_f32_stream(char *const *dst, int ndst, const float *a, const float *b, size_t n) {
#if defined(__x86_64__)
  for (int k = 0; k < ndst; k++)
    if ((uintptr_t)dst[k] & 15) return false;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m128 x0 = _mm_add_ps(_mm_loadu_ps(a + i), _mm_loadu_ps(b + i));
    __m128 x1 = _mm_add_ps(_mm_loadu_ps(a + i + 4), _mm_loadu_ps(b + i + 4));
    for (int k = 0; k < ndst; k++) {
      float *d = (float *)(void *)dst[k];
      _mm_stream_ps(d + i, x0);
      _mm_stream_ps(d + i + 4, x1);
    }
  }
  for (; i < n; i++)
    for (int k = 0; k < ndst; k++) ((float *)(void *)dst[k])[i] = a[i] + b[i];
  return true;
#else
  (void)dst, (void)ndst, (void)a, (void)b, (void)n;
  return false;
#endif
}
