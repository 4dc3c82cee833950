/* partitioner/ internals: the state of one partitioning run, instruction
 * builders for the output module, and resharding. */
#ifndef TS_PARTITIONER_INTERNAL_H
#define TS_PARTITIONER_INTERNAL_H

#include "ts_partitioner.h"
#include "ts_sharding.h"

#define TS_PART_MAX_RANK 64

typedef struct {
  ts_hlo_module_t *src, *dst;
  ts_partition_opts_t opts;
  int64_t n;                    /* partitions */
  ts_arena_t *a;                /* sharding values of this run */
  ts_diag_t *diag;
  ts_status_t st;               /* sticky: builders return NULL once set */
  /* Per source instruction id: its partitioned value and that value's
   * sharding (for manual values, MANUAL: the local shape is the shape). */
  ts_hlo_instr_t **val;
  ts_sharding_value_t **sh;
  /* Per source computation index: its unpartitioned clone (scalar callees
   * such as reducers), or NULL. */
  ts_hlo_comp_t **clone;
  ts_hlo_comp_t *cur;           /* the output computation being built */
  ts_hlo_instr_t *pid;          /* partition-id in cur, made on first use */
  int64_t next_channel;
  ts_hlo_comp_t *reducers[TS_ELEM_COUNT][2]; /* [elem][0 add / 1 or] */
  ts_strmap_t cache;            /* "rank:sharding text" -> value */
  /* Derived shardings, device groups, reshard costs and dot plans of this
   * run, memoised by the addresses of interned inputs (derive.c), so that a
   * handler costs O(rank) however many devices there are once its inputs
   * have been seen. */
  ts_sharding_cache_t *memo;
  ts_sharding_value_t *replicated; /* the one REPLICATED value of the run */
} part_t;

/* Records the first error (naming `i` when given) and returns it. */
ts_status_t ts_part_fail(part_t *p, const ts_hlo_instr_t *i, ts_status_t st, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* ---- building the output module (build.c) ------------------------------- */

ts_shape_t *ts_part_shape(part_t *p, ts_elem_t e, int rank, const int64_t *dims);
ts_hlo_instr_t *ts_part_add(part_t *p, ts_opcode_t op, const ts_shape_t *shape, ts_hlo_instr_t *const *ops,
                            int nops, const char *name);
void ts_part_attr_int(part_t *p, ts_hlo_instr_t *i, const char *name, int64_t v);
void ts_part_attr_bool(part_t *p, ts_hlo_instr_t *i, const char *name, bool v);
void ts_part_attr_ints(part_t *p, ts_hlo_instr_t *i, const char *name, int n, const int64_t *v);
void ts_part_attr_ident(part_t *p, ts_hlo_instr_t *i, const char *name, const char *v);
void ts_part_attr_comp(part_t *p, ts_hlo_instr_t *i, const char *name, ts_hlo_comp_t *c);
void ts_part_attr_groups(part_t *p, ts_hlo_instr_t *i, int64_t ngroups, int64_t group_size, const int64_t *groups);
/* A copy of attribute `a` of the source module in the output module; called
 * computations map to their unpartitioned clones. */
void ts_part_copy_attr(part_t *p, ts_hlo_instr_t *i, const ts_hlo_attr_t *a);
/* Every attribute of source instruction i onto its output r, r's array sized
 * for them in one allocation. */
void ts_part_copy_attrs(part_t *p, ts_hlo_instr_t *r, const ts_hlo_instr_t *i);
ts_literal_t *ts_part_copy_literal(part_t *p, const ts_literal_t *l);
/* Adds computation `name` to the partitioned module and makes it the one
 * ts_part_add builds into, with no partition-id yet (NULL with p->st set
 * when it cannot); ts_part_leave_comp goes back to where `was` says. */
typedef struct {
  ts_hlo_comp_t *cur;
  ts_hlo_instr_t *pid;
} part_where_t;
ts_hlo_comp_t *ts_part_enter_comp(part_t *p, const char *name, part_where_t *was);
void ts_part_leave_comp(part_t *p, const part_where_t *was);
/* The unpartitioned clone of a source computation (memoised). */
ts_hlo_comp_t *ts_part_clone_comp(part_t *p, const ts_hlo_comp_t *c);

ts_hlo_instr_t *ts_part_const_s32(part_t *p, int n, const int64_t *v); /* s32[n], or s32[] when n < 0 */
ts_hlo_instr_t *ts_part_zero(part_t *p, ts_elem_t e);                  /* scalar 0 / false */
ts_hlo_instr_t *ts_part_partition_id(part_t *p);                       /* u32[] */
/* The scalar s32 value table[partition-id]. */
ts_hlo_instr_t *ts_part_table_lookup(part_t *p, const int64_t *table);
ts_hlo_instr_t *ts_part_reshape(part_t *p, ts_hlo_instr_t *x, int rank, const int64_t *dims);
ts_hlo_instr_t *ts_part_broadcast_scalar(part_t *p, ts_hlo_instr_t *x, int rank, const int64_t *dims);
ts_hlo_instr_t *ts_part_slice(part_t *p, ts_hlo_instr_t *x, const int64_t *start, const int64_t *limit);
ts_hlo_instr_t *ts_part_pad(part_t *p, ts_hlo_instr_t *x, const int64_t *hi);
/* A two-parameter scalar computation: add (or `or` for pred). */
ts_hlo_comp_t *ts_part_sum_comp(part_t *p, ts_elem_t e);
/* A collective with explicit groups over partition ids, a fresh channel_id
 * and use_global_device_ids=true (SPMD-partitioned modules' convention). */
ts_hlo_instr_t *ts_part_collective(part_t *p, ts_opcode_t op, const ts_shape_t *shape, ts_hlo_instr_t *x,
                                   int64_t ngroups, int64_t group_size, const int64_t *groups);

/* A collective-permute of x along pairs[2k] -> pairs[2k+1], k < npairs. */
ts_hlo_instr_t *ts_part_permute(part_t *p, ts_hlo_instr_t *x, int64_t npairs, const int64_t *pairs);

/* ---- the run's memo (derive.c) ----------------------------------------- */

/* Memo keys are words: a tag naming the function first, then its inputs
 * (values by address: they live in p->a or are interned, and never change). */
enum {
  TS_PART_MEMO_REPLICATE = 1,
  TS_PART_MEMO_SELECT,
  TS_PART_MEMO_EMBED,
  TS_PART_MEMO_OPERAND,
  TS_PART_MEMO_GROUPS,
  TS_PART_MEMO_RESHARD_BYTES,
  TS_PART_MEMO_DOT_PLAN,
};
static inline int64_t ts_part_key_ptr(const void *x) { return (int64_t)(intptr_t)x; }
bool ts_part_memo_get(part_t *p, const int64_t *key, int n, void **out);
void ts_part_memo_put(part_t *p, const int64_t *key, int n, void *v); /* sets p->st on OOM */
/* The run's one value equal to v (v itself the first time); NULL stays NULL. */
ts_sharding_value_t *ts_part_intern(part_t *p, ts_sharding_value_t *v);
/* ts_part_reshard_bytes, memoised. */
int64_t ts_part_reshard_cost(part_t *p, const ts_shape_t *shape, const ts_sharding_value_t *from,
                             const ts_sharding_value_t *to);

/* ---- shardings and resharding (reshard.c) ------------------------------- */

/* The per-device shape of `shape` under sharding `s` (tuples recursively;
 * tiled dims ceil(N/t); everything else the full shape). */
const ts_shape_t *ts_part_local_shape(part_t *p, const ts_shape_t *shape, const ts_sharding_value_t *s);
static inline bool ts_part_tiled(const ts_sharding_value_t *s) { return s && s->kind == TS_SHARD_TILED; }
/* Row-major position of idx[0..n) in an array of dims. */
static inline int64_t ts_part_linear(int n, const int64_t *dims, const int64_t *idx) {
  int64_t l = 0;
  for (int k = 0; k < n; k++) l = l * dims[k] + idx[k];
  return l;
}
ts_sharding_value_t *ts_part_replicated(part_t *p);
/* `s` (over `rank` dims) with the tiles of dims where keep[d] is false
 * folded into a replicated subgroup. */
ts_sharding_value_t *ts_part_replicate_dims(part_t *p, const ts_sharding_value_t *s, int rank, const bool *keep);
/* A sharding of a rank-`rank` array whose dim map[k] carries the tiles of
 * dim k of `s` (s has `srank` data dims and no dim left out: fold them into
 * replication first); other dims are untiled. */
ts_sharding_value_t *ts_part_embed(part_t *p, const ts_sharding_value_t *s, int srank, int rank,
                                   const int64_t *map);
/* Groups of devices that differ only in their tile index along the data
 * dims where mask[d] (same index elsewhere, subgroups included), each in
 * row-major tile order over those dims; arrays in p->a, memoised: shared
 * between callers, read-only. */
void ts_part_groups_over_dims(part_t *p, const ts_sharding_value_t *s, const bool *mask, int64_t *ngroups,
                              int64_t *group_size, int64_t **groups);
/* Bytes per device the collectives of ts_part_reshard(from -> to) would
 * move (each collective counted at its larger buffer, as `tessera check`
 * counts); a large value for what it cannot do. Emits nothing. */
int64_t ts_part_reshard_bytes(part_t *p, const ts_shape_t *shape, const ts_sharding_value_t *from,
                              const ts_sharding_value_t *to);
/* x (sharded `from`, of logical `shape`) as sharded `to`. */
ts_hlo_instr_t *ts_part_reshard(part_t *p, ts_hlo_instr_t *x, const ts_shape_t *shape,
                                const ts_sharding_value_t *from, const ts_sharding_value_t *to);

/* A sharding of an n-dim array whose dim k is dim sel[k] of `s`; dims of s
 * not selected must be untiled. */
ts_sharding_value_t *ts_part_select_dims(part_t *p, const ts_sharding_value_t *s, int n, const int64_t *sel);
/* The sharding of an operand of rank `rank` whose dim opdim[k] corresponds
 * to result dim outdim[k] (k < n), under result sharding s (rank out_rank):
 * result dims not listed are replicated, operand dims not listed untiled. */
ts_sharding_value_t *ts_part_operand_sharding(part_t *p, const ts_sharding_value_t *s, int out_rank, int n,
                                              const int64_t *outdim, const int64_t *opdim, int rank);

/* ---- handlers (partitioner.c and one file per op family) ---------------- */

const ts_sharding_value_t *ts_part_leaf(const ts_sharding_value_t *s, int k); /* element k of a tuple sharding */
/* Operand k of i, resharded to `want`. */
ts_hlo_instr_t *ts_part_operand(part_t *p, const ts_hlo_instr_t *i, int k, const ts_sharding_value_t *want);
/* i's op on new operands with a new shape, its attributes copied. */
ts_hlo_instr_t *ts_part_emit_like(part_t *p, const ts_hlo_instr_t *i, ts_hlo_instr_t *const *ops,
                                  const ts_shape_t *shape);
/* Records i's partitioned value and its sharding. */
void ts_part_set(part_t *p, const ts_hlo_instr_t *i, ts_hlo_instr_t *v, const ts_sharding_value_t *s);
const ts_shape_t *ts_part_full_shape(part_t *p, const ts_shape_t *s);
/* Any op on full values: operands gathered, the result sliced to `s`. */
void ts_part_fallback(part_t *p, const ts_hlo_instr_t *i, const ts_sharding_value_t *s);
/* Whether s refines ps on exactly one dim (*dim) by the group size gs, so
 * that each group's summed partial splits into its members' tiles of s;
 * *ordered (arena) then lists each group's members in the order of their
 * part. The split must be even unless `uneven` (then ps must leave *dim
 * whole: the last parts are short). */
bool ts_part_scatter_order(part_t *p, const ts_shape_t *shape, const ts_sharding_value_t *ps, int64_t ng, int64_t gs,
                           const int64_t *groups, const ts_sharding_value_t *s, bool uneven, int *dim,
                           int64_t **ordered);
/* Sums one partial value per device (its local shape under `ps`) over
 * `groups`, leaving it sharded `s` (reduce-scatter when s refines ps on one
 * dim by the group size, else all-reduce and a reshard). */
ts_hlo_instr_t *ts_part_sum_partials(part_t *p, ts_hlo_instr_t *partial, const ts_shape_t *shape,
                                     const ts_sharding_value_t *ps, int64_t ng, int64_t gs, int64_t *groups,
                                     ts_hlo_comp_t *to_apply, const ts_sharding_value_t *s);
bool ts_part_reducer_is_add(const ts_hlo_comp_t *c);
bool ts_part_any_manual(const ts_sharding_value_t *s);
bool ts_part_init_is_identity(const ts_hlo_instr_t *init, const ts_hlo_comp_t *comp);
ts_hlo_instr_t *ts_part_reducer_identity(part_t *p, const ts_hlo_comp_t *comp, ts_elem_t e);

/* ---- dots (dot.c, windowed.c) ------------------------------------------ */

/* A dot as a loop nest over batch dims, lhs free dims, rhs free dims (the
 * result's dims, in its order) and contracting dims. A sharding of this
 * space says which part of the loop nest each device runs; the operands'
 * and the result's shardings follow from it, and tiled contracting dims
 * leave partial sums (GSPMD section 4.4). */
typedef struct {
  int nb, nlf, nrf, nc, nout, rank, lr, rr;
  int64_t lmap[TS_PART_MAX_RANK], rmap[TS_PART_MAX_RANK], omap[TS_PART_MAX_RANK]; /* operand dim -> space dim */
  int64_t size[2 * TS_PART_MAX_RANK];
} dot_space_t;

/* One way to run the dot: the space sharding and what follows from it. */
typedef struct {
  ts_sharding_value_t *I, *ls, *rs, *ps; /* space, lhs, rhs, (partial) result */
  bool partial;                          /* contracting dims tiled: sums needed */
  int64_t cost;                          /* bytes per device of every collective */
} dot_plan_t;

/* Runs dot i as plan `pl` would, but as a loop of partial dots whose
 * operand blocks (or partial results) travel by collective-permute (XLA's
 * windowed einsum), when the options and sizes call for it; false (having
 * emitted nothing) otherwise. */
bool ts_part_windowed_dot(part_t *p, const ts_hlo_instr_t *i, const dot_space_t *sp, const dot_plan_t *pl,
                          const ts_sharding_value_t *s);

/* windowed.c: estimated seconds per device of dot i run as plan pl, by the
 * nominal time model of choose_faster_windowed_einsum_over_mem: plain, or
 * as a windowed loop where one is allowed (*can_loop: above the threshold,
 * and the plan gathers an operand or scatters partial sums) and faster
 * (*loop). */
double ts_part_dot_seconds(part_t *p, const ts_hlo_instr_t *i, const dot_space_t *sp, const dot_plan_t *pl,
                           const ts_sharding_value_t *s, bool *can_loop, bool *loop);

/* Handlers: void ones always partition i; bool ones return false (having
 * emitted nothing) when their strategy does not apply. */
void ts_part_reduce(part_t *p, const ts_hlo_instr_t *i, const ts_sharding_value_t *s);   /* reduce.c */
void ts_part_dot(part_t *p, const ts_hlo_instr_t *i, const ts_sharding_value_t *s);      /* dot.c */
bool ts_part_convolution(part_t *p, const ts_hlo_instr_t *i, const ts_sharding_value_t *s);
bool ts_part_passthrough(part_t *p, const ts_hlo_instr_t *i, const ts_sharding_value_t *s); /* slicing.c */
bool ts_part_slice_halo(part_t *p, const ts_hlo_instr_t *i, const ts_sharding_value_t *s);
bool ts_part_conv_halo(part_t *p, const ts_hlo_instr_t *i, const ts_sharding_value_t *s);
bool ts_part_dus(part_t *p, const ts_hlo_instr_t *i, const ts_sharding_value_t *s);
bool ts_part_reduce_window_halo(part_t *p, const ts_hlo_instr_t *i, const ts_sharding_value_t *s);
/* Halo exchange (slicing.c; GSPMD section 4.3). ts_part_halo_span: the
 * shifts [*smin, *smax] of source tile positions relative to q that the
 * windows [A*q + B, A*q + B + L) (q < nq) read over t tiles of ci; false
 * when they span more than four shards (the halo is then not worth it).
 * ts_part_halo_window: x is sharded `s` with t tiles of ci along d over an
 * array of n_in; the device at tile position q gets the window
 * [A*q + B, A*q + B + L) of the full dim, its neighbours' rows coming over
 * by collective-permute. With a scalar `fill`, positions outside [0, n_in)
 * read it (convolution padding: zero; a reduce-window's: its init value;
 * both also cover the padding of uneven shards); without, a shard past
 * either end leaves zeros. Callers check ts_part_halo_span first, before
 * emitting the operand; *out is NULL only after an error (p->st). */
bool ts_part_halo_span(int64_t t, int64_t ci, int64_t A, int64_t B, int64_t L, int64_t nq, int64_t *smin,
                       int64_t *smax);
void ts_part_halo_window(part_t *p, ts_hlo_instr_t *x, const ts_sharding_value_t *s, int d, int64_t n_in,
                         int64_t A, int64_t B, int64_t L, int64_t nq, ts_hlo_instr_t *fill, ts_hlo_instr_t **out);
/* manual.c: manual and subgroup-manual regions, their boundaries, and user
 * collectives kept on shards; false (having emitted nothing) when i is
 * none of those. */
bool ts_part_manual(part_t *p, const ts_hlo_instr_t *i, const ts_sharding_value_t *s);
bool ts_part_select_and_scatter(part_t *p, const ts_hlo_instr_t *i, const ts_sharding_value_t *s); /* select_scatter.c */
bool ts_part_concat_sum(part_t *p, const ts_hlo_instr_t *i, const ts_sharding_value_t *s);
bool ts_part_pad_halo(part_t *p, const ts_hlo_instr_t *i, const ts_sharding_value_t *s);
bool ts_part_conv_contract(part_t *p, const ts_hlo_instr_t *i, const ts_sharding_value_t *s);
bool ts_part_gather(part_t *p, const ts_hlo_instr_t *i, const ts_sharding_value_t *s);      /* gather.c */
bool ts_part_scatter_add(part_t *p, const ts_hlo_instr_t *i, const ts_sharding_value_t *s);

#endif
