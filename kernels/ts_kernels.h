/* Tessera kernels: the runtime's per-opcode CPU kernels (BLAS-backed dots
 * and convolutions included), the array view they run over, element access,
 * and the calling convention every kernel follows.
 *
 * The reference interpreter (interp/) evaluates with its own copy of the
 * per-opcode code, so that `--check` compares two implementations; the two
 * share only what this header declares above "the runtime's kernels".
 *
 * Arrays are dense and row-major in logical index order whatever the HLO
 * layout says; one element per ts_elem_storage_bytes (sub-byte types one per
 * byte). Kernels write into buffers their caller allocated, so the runtime
 * can run them over its own buffer assignment without per-op allocation. */
#ifndef TS_KERNELS_H
#define TS_KERNELS_H

#include "ts_common.h"
#include "ts_hlo.h"

/* ---- arrays ------------------------------------------------------------- */

/* A view of one array: not owning. */
typedef struct {
  ts_elem_t elem;
  int rank;
  const int64_t *dims;
  void *data;
} ts_array_t;

int64_t ts_array_count(const ts_array_t *a); /* elements (1 for a scalar) */
size_t ts_array_bytes(const ts_array_t *a);  /* count * storage bytes */

/* ---- element access ----------------------------------------------------- */
/* Storage as ts_elem_storage_bytes says. These are for the generic (slow)
 * paths; hot loops specialise on f32/f64/s32 and index the data directly. */

/* Element i of a real or integer array as a double (exact for every float
 * type; integers converted; complex: the real part). */
double ts_load_f(ts_elem_t e, const void *p, int64_t i);
/* Element i as an integer: signed types sign-extended, unsigned ones
 * zero-extended (u64 as its bit pattern), pred 0/1; floats truncated
 * toward zero as XLA's convert (NaN -> 0, saturating). */
int64_t ts_load_i(ts_elem_t e, const void *p, int64_t i);
/* Stores v as element i: floats rounded to nearest even (ts_elem_from_double),
 * integers by XLA's convert rules (saturating, NaN -> 0), pred v != 0,
 * complex (v, 0). */
void ts_store_f(ts_elem_t e, void *p, int64_t i, double v);
/* Stores an integer: integer types wrap (two's complement truncation to the
 * type's width, sub-byte types sign- or zero-extended in their byte), pred
 * v != 0, floats converted with one rounding. */
void ts_store_i(ts_elem_t e, void *p, int64_t i, int64_t v);
/* Complex element i as (re, im); real types give (v, 0). */
void ts_load_c(ts_elem_t e, const void *p, int64_t i, double *re, double *im);
void ts_store_c(ts_elem_t e, void *p, int64_t i, double re, double im);

/* ---- the kernel calling convention -------------------------------------- */

typedef struct ts_kernel_ctx ts_kernel_ctx_t;

/* What a kernel may ask of whoever runs it. */
struct ts_kernel_ctx {
  /* Evaluates a called computation (reduce's to_apply, sort's comparator,
   * map's computation, scatter's update computation, ...) with one array per
   * parameter, writing the result's leaves into `outs` (allocated by the
   * caller with the shapes of comp->root->shape's leaves). */
  ts_status_t (*apply)(ts_kernel_ctx_t *ctx, const ts_hlo_comp_t *comp, const ts_array_t *args,
                       int nargs, ts_array_t *outs, int nouts);
  void *apply_state;
  int64_t partition_id, replica_id; /* of the device the kernel runs for */
  ts_diag_t *diag;                  /* where kernel errors go */
  const ts_source_t *source;        /* for located errors; may be NULL */
  void *scratch;                    /* ts_kernel_scratch's buffer */
  size_t scratch_cap;
};

/* A scratch buffer of at least `bytes`, reused across calls (valid until the
 * next call); NULL on OOM. */
void *ts_kernel_scratch(ts_kernel_ctx_t *ctx, size_t bytes);
void ts_kernel_ctx_free(ts_kernel_ctx_t *ctx); /* frees the scratch */

/* Reports an error about `instr` ("file:line:col: error: %name: message"
 * when the instruction has a location) and returns `st`. */
ts_status_t ts_kernel_fail(ts_kernel_ctx_t *ctx, const ts_hlo_instr_t *instr, ts_status_t st,
                           const char *fmt, ...) __attribute__((format(printf, 4, 5)));
ts_status_t ts_kernel_vfail(ts_kernel_ctx_t *ctx, const ts_hlo_instr_t *instr, ts_status_t st,
                            const char *fmt, va_list ap);

/* A kernel: `in` holds the operands (arrays, in operand order), `out` the
 * leaves of instr->shape (one for an array result), allocated by the caller
 * and not aliasing the inputs unless the kernel's table entry says so.
 * Unsupported variants (a type or attribute the kernel cannot do) return
 * TS_ERR_INVALID_ARGUMENT through ts_kernel_fail, naming what. */
typedef ts_status_t (*ts_kernel_fn)(ts_kernel_ctx_t *ctx, const ts_hlo_instr_t *instr,
                                    const ts_array_t *in, int nin, ts_array_t *out, int nout);

/* ---- the runtime's kernels ---------------------------------------------- */

/* The kernel for an opcode; NULL for the ones the executor itself handles
 * (parameter, constant, tuple, get-tuple-element, call, while, conditional,
 * collectives, custom-call, ...) and for those with none. */
ts_kernel_fn ts_kernel_for(ts_opcode_t op);

/* Writes an array literal's elements into `out` (allocated by the caller with
 * the literal's shape, zero-filled: an elided literal `{...}` stays zeros, as
 * XLA's parser makes it), narrowed to the element type (round to nearest
 * even). TS_ERR_INVALID_ARGUMENT when the literal's element count is not the
 * array's. */
ts_status_t ts_kernel_literal(const ts_literal_t *lit, ts_array_t *out);

/* How many threads one BLAS call (dot, convolution) may use in this
 * process: a runtime with several devices per process, or several ranks per
 * host, gives each its share of the cores. OpenBLAS's setting is
 * process-wide, so this also bounds the interpreter's BLAS calls. */
void ts_kernels_set_blas_threads(int n);

/* ---- helpers the kernels and the reference interpreter share ----------- */

#define TS_MAX_RANK 64

/* Whether the type computes as an integer (signed, unsigned or pred). */
static inline bool ts_elem_is_int(ts_elem_t e) {
  return e == TS_PRED || ts_elem_is_signed_int(e) || ts_elem_is_unsigned_int(e);
}

/* ---- index arithmetic --------------------------------------------------- */

/* Row-major strides in elements. */
static inline void ts_strides(int rank, const int64_t *dims, int64_t *strides) {
  int64_t s = 1;
  for (int d = rank - 1; d >= 0; d--) {
    strides[d] = s;
    s *= dims[d];
  }
}

/* Advances a multi-index in row-major order; false after the last one. */
static inline bool ts_index_next(int rank, const int64_t *dims, int64_t *idx) {
  for (int d = rank - 1; d >= 0; d--) {
    if (++idx[d] < dims[d]) return true;
    idx[d] = 0;
  }
  return false;
}

/* ---- reducers ----------------------------------------------------------- */

/* What a two-parameter scalar computation computes, when it is one binary op
 * of its two parameters (either order): the fast paths of reduce, scatter,
 * reduce-window and all-reduce use it. TS_OP_COUNT when it is anything else
 * (the caller then goes through ctx->apply). */
ts_opcode_t ts_reducer_op(const ts_hlo_comp_t *comp);

/* How the reduce kernel walks its operand: the operand's dims with size-1
 * dims dropped and neighbours of the same kind (reduced or kept) merged
 * into n >= 1 groups; strides in elements, 0 in the output for reduced
 * groups. codegen/ emits the same walk, so that its reduces match bit for
 * bit. `reduced` lists dims of an operand of `rank` dims `dims`. */
typedef struct {
  int n;
  int64_t dim[TS_MAX_RANK], in_stride[TS_MAX_RANK], out_stride[TS_MAX_RANK];
  bool red[TS_MAX_RANK];
} ts_reduce_groups_t;
void ts_reduce_groups(int rank, const int64_t *dims, const ts_i64_list_t *reduced, ts_reduce_groups_t *g);

#endif
