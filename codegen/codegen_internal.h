/* codegen/ internals: what codegen.c emits for one element of a fusion
 * (the CPU loops there and the GPU kernels of nvptx.c share it), the
 * math functions math.c emits into a module, and the on-disk kernel cache
 * (cache.c). */
#ifndef CODEGEN_INTERNAL_H
#define CODEGEN_INTERNAL_H

#include "ts_hlo.h"

#include <llvm-c/Core.h>

#define MAX_IN 256 /* parameters of a compiled fusion, at most */

typedef struct {
  LLVMContextRef cx;
  LLVMModuleRef mod;
  LLVMBuilderRef b;
  LLVMTypeRef f32, i1, i8, i16, i32, i64, i8p, i8pp;
  const char *perturb; /* TESSERA_CODEGEN_PERTURB: an opcode whose results are made wrong */
  LLVMValueRef *v;     /* per instruction id: its value in the loop being emitted, or NULL (each loop allocates) */
} cg_t;

/* Sets g's context and types (mod, b and perturb are the caller's). */
void cg_types(cg_t *g, LLVMContextRef cx);

/* Whether computation c (called with nin operands) is one codegen/
 * compiles: elementwise ops and index maps over f32, s32, pred, bf16 and
 * f16 values, the root optionally a reduce of them (one operand, a scalar
 * constant or parameter init, a region that is one add, multiply, maximum
 * or minimum over f32, bf16, f16 or s32, or and/or/xor over s32 or pred);
 * *flat: one loop over the linear index (of the root, or of the reduce's
 * operand) does (else each operand is read at its index map). */
bool cg_supported(const ts_hlo_comp_t *c, int nin, bool *flat);
/* Whether fusion instruction `fusion` gets a kernel: an array result and a
 * supported called computation (flat: see cg_supported). The CPU JIT and
 * the NVPTX kernels compile the same set. */
bool cg_fusion_compiles(const ts_hlo_instr_t *fusion, bool *flat);

/* The value of c's root (float, i32 for s32, i1 for pred, i16 holding the
 * bits of bf16 and f16) at row-major
 * linear index `lin` (i64), emitted at g->b's position as straight-line
 * code; inp[p] is parameter p's data (cg_data). A reduce root is that one
 * output's whole reduction, in kernels/'s order of operations (bit for bit
 * its result), as loops in new blocks: g->b ends in the last. NULL when out
 * of memory. */
LLVMValueRef cg_element(cg_t *g, const ts_hlo_comp_t *c, bool flat, LLVMValueRef *inp, LLVMValueRef lin);

/* Parameter data pointer raw (i8*) as the element type's: float* for f32,
 * i32* for s32, i16* for bf16 and f16, raw itself (i8*, one byte per pred)
 * for pred. */
LLVMValueRef cg_data(cg_t *g, ts_elem_t elem, LLVMValueRef raw);

/* Ends the function whose entry block g->b is at (its inputs inp already
 * there, see cg_element) with `for (i = first; i < n; i += step) out[i] =
 * root of c at i; return;` in new blocks "loop" and "exit"; out is the i8*
 * result data (cg_data). The CPU loops step by 1 from 0, the GPU kernels by
 * the grid from the thread's index (a reduce root: one output per thread,
 * so any grid is correct; the CPU kernels of reduces are codegen.c's own
 * loops instead, which vectorize across outputs). false when out of
 * memory. */
bool cg_emit_loop(cg_t *g, const ts_hlo_comp_t *c, bool flat, LLVMValueRef *inp, LLVMValueRef out,
                  LLVMValueRef first, LLVMValueRef step, LLVMValueRef n);

/* An internal, always-inlined `float f(float)` computing `op` (exp, log,
 * log1p, expm1, tanh, logistic, sqrt, rsqrt, erf, sine, cosine; `float
 * f(float x, float y)` for power, x^y) in module `mod`, created on first
 * use; NULL for an opcode with no implementation here. */
LLVMValueRef cg_math_f32(LLVMModuleRef mod, ts_opcode_t op);

/* An LLVM intrinsic over type t (llvm.fabs.f64 over double, ...), declared
 * on first use; cg_intrinsic_f32 over float (llvm.fabs.f32, llvm.rint.f32, ...). */
LLVMValueRef cg_intrinsic(LLVMModuleRef mod, const char *name, LLVMTypeRef t, int nargs);
LLVMValueRef cg_intrinsic_f32(LLVMModuleRef mod, const char *name, int nargs);

/* ---- the on-disk kernel cache (cache.c) -------------------------------------
 * One entry per compiled module: <dir>/<64 hex of the key>.o, a header
 * (magic, format, key, payload length, payload SHA-256) and the object
 * file. Thread-safe; the JIT lock serializes codegen.c's use anyway. */
#define CG_KEY_LEN 32     /* SHA-256 */
#define CG_CACHE_FORMAT 1 /* bump when an entry's layout or the key's fields change */

bool cg_sha256(const void *p, size_t n, unsigned char out[CG_KEY_LEN]);
void cg_key_hex(const unsigned char key[CG_KEY_LEN], char hex[2 * CG_KEY_LEN + 1]);
/* The entries' folder: $TESSERA_CACHE_DIR/kernels, else
 * $XDG_CACHE_HOME/tessera/kernels, else $HOME/.cache/tessera/kernels; NULL
 * when the cache is off (TESSERA_CACHE_DIR empty or "off", no HOME) or out
 * of memory. The caller frees it (ts_free). */
char *cg_cache_dir(void);
/* Entry key's file: dir/<64 hex>.o (the caller frees it; NULL: out of memory). */
char *cg_cache_path(const char *dir, const unsigned char key[CG_KEY_LEN]);
/* Entry `key` of `dir`: returns the buffer to free (ts_free) and points *obj
 * at the object file inside it, *len bytes; NULL on a miss. An entry that is
 * unreadable, truncated or corrupt warns and is a miss. A hit sets the
 * entry's mtime to now (its last use, for cg_cache_evict) when it is over a
 * minute old; silently not where the file cannot be touched (a cache shared
 * read-only). */
char *cg_cache_load(const char *dir, const unsigned char key[CG_KEY_LEN], const char **obj, size_t *len);
/* Stores the object as entry `key` (creating dir): written to a temporary
 * file in dir, fsynced, renamed over the entry, then cg_cache_evict(dir,
 * cg_cache_max_bytes(), key). A failure warns and is otherwise ignored. */
void cg_cache_store(const char *dir, const unsigned char key[CG_KEY_LEN], const void *obj, size_t len);
/* The entries' size limit in bytes: TESSERA_CACHE_MAX_MB MiB, 256 MiB when
 * it is unset or empty; any other value that is not a decimal integer
 * (digits only, small enough for bytes to fit 64 bits) warns, naming it,
 * and is the default. */
#define CG_CACHE_MAX_MB_DEFAULT 256
uint64_t cg_cache_max_bytes(void);
/* While dir's entries (regular files named <64 hex>.o; nothing else is
 * counted or touched) take more than max_bytes in all, deletes the least
 * recently used (oldest mtime; cg_cache_load refreshes it), never entry
 * `keep` (NULL: none), which may stay over the limit alone. Also deletes a
 * crashed writer's temporaries (<64 hex>.o.tmp.*) over an hour old. Other
 * processes may evict at once: an entry already gone is no error; any other
 * error warns and stops. */
void cg_cache_evict(const char *dir, uint64_t max_bytes, const unsigned char keep[CG_KEY_LEN]);
/* The cache's warning ("tessera: warning: kernel cache: ..."), printed once
 * per process: later ones are dropped. */
void cg_cache_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
