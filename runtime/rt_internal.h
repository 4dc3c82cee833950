/* runtime/ internals: the compiled program (per computation: order, value
 * slots, logical buffers, steps), shared by program.c, exec.c and
 * collective.c. Everything here is immutable once ts_rt_program_create
 * returns, so the devices of a process share one program. */
#ifndef RT_INTERNAL_H
#define RT_INTERNAL_H

#include "ts_runtime.h"

#include <stdatomic.h>

#define RT_ALIGN 64       /* every arena buffer starts on a cache line */
#define RT_MAX_OPERANDS 1024
#define RT_MAX_DEPTH 64   /* nested applies (kernel -> computation -> kernel ...) */

/* ---- buffers and slots ---------------------------------------------------- */

/* A logical buffer of one computation: where one array leaf lives. */
typedef enum {
  BUF_ARENA, /* in the computation's arena at `offset` */
  BUF_PARAM, /* the caller's pointer for parameter leaf `index` */
  BUF_INPUT, /* entry only: the device's input leaf `index` */
  BUF_CONST, /* the program's constant data (read-only, shared) */
} rt_buf_kind_t;

typedef struct {
  rt_buf_kind_t kind;
  int index;           /* PARAM: parameter leaf; INPUT: input leaf */
  const void *cdata;   /* CONST */
  size_t bytes;
  int def, last;       /* live over order positions [def, last] (ARENA) */
  int64_t offset;      /* ARENA */
} rt_buf_t;

/* ---- steps ------------------------------------------------------------------ */

typedef enum {
  ST_NOP,        /* an aliasing instruction (entry only: hooks and progress see it) */
  ST_KERNEL,     /* ts_kernel_for(op) over in/out slots */
  ST_ID,         /* partition-id / replica-id */
  ST_ZERO,       /* writes zeros to its out slots (async contexts) */
  ST_COPY_START, /* out[0] = in[0]; context zeroed */
  ST_CALL,       /* call / fusion / synchronous async-start: run callee, copy its root */
  ST_WHILE,
  ST_COND,
  ST_COLL,       /* a synchronous collective */
  ST_COLL_START, /* post */
  ST_COLL_DONE,  /* wait (and finish: rearrange) */
} rt_step_kind_t;

typedef struct {
  rt_step_kind_t kind;
  const ts_hlo_instr_t *instr;
  int gindex;          /* global instruction index (progress, trace) */
  ts_kernel_fn fn;
  int nin, nout;
  int *in;             /* slot ids: kernel operands / collective operands / callee arguments */
  int *out;            /* slot ids written by the step */
  int ncallee;
  int *callee;         /* computation indices (while: cond, body; conditional: branches) */
  int *branch_arg;     /* conditional: first slot of branch b's operand; nargs in branch_nargs */
  int *branch_nargs;
  int coll;            /* collective descriptor (ST_COLL*), -1 otherwise */
  int start;           /* ST_COLL_DONE: step index of the start in this computation */
  int zero_from;       /* ST_COLL_START / ST_CALL: out[zero_from..nout) are zeroed context leaves */
} rt_step_t;

typedef struct {
  const ts_hlo_comp_t *comp;
  int n;                         /* instructions, in run order */
  const ts_hlo_instr_t **order;
  int *slot_base;                /* per position: first slot of its result leaves */
  int nslots;
  int *slot_buf;                 /* slot -> buffer */
  const ts_shape_t **slot_shape; /* slot -> leaf shape */
  int nbufs, bufs_cap;
  rt_buf_t *bufs;
  int nparam_leaves;
  int *param_buf;                /* parameter leaf -> buffer */
  int root_slot, nroot;          /* root leaves: slots [root_slot, root_slot + nroot) */
  int *stage_buf;                /* per root leaf: staging buffer for a while body, -1 if none */
  int nsteps;
  rt_step_t *steps;
  size_t arena_bytes;
  uint64_t naive_bytes;          /* every defined buffer on its own */
} rt_comp_t;

/* ---- collectives ------------------------------------------------------------ */

/* One set of groups a collective runs over, in global device ids: group_of[d]
 * is device d's group; members[g] lists group g in XLA's order. Collectives
 * with equal sets share one sub-communicator. */
typedef struct {
  ts_coll_group_mode_t mode;
  const ts_replica_groups_t *rg; /* as written (NULL: every id), for ts_coll_comm_split */
  int ngroups;
  int *group_of;                 /* per device */
  int *group_size;
  int64_t **members;
} rt_groupset_t;

typedef struct {
  const ts_hlo_instr_t *instr;   /* carries the attributes (the start, or a wrapped root) */
  ts_opcode_t kind;              /* ALL_REDUCE, ALL_GATHER, REDUCE_SCATTER, ALL_TO_ALL,
                                    COLLECTIVE_PERMUTE, COLLECTIVE_BROADCAST */
  int groupset;
  ts_coll_redop_t redop;
  int dim;                       /* gather / scatter / all-to-all dimension, -1 for the tuple all-to-all */
  int npairs;
  int64_t (*pairs)[2];           /* collective-permute, in the group's ids */
  size_t scratch;                /* bytes of device scratch it needs */
} rt_coll_t;

/* ---- the program ------------------------------------------------------------- */

typedef enum {
  OUT_VIEW,    /* the output is its buffer (arena, input or constant) */
  OUT_INPLACE, /* computed directly into its aliased input */
  OUT_COPY,    /* copied into its aliased input at the end of the step */
} rt_out_mode_t;

/* A constant's array leaves (nested tuples flattened, in order), each in a
 * buffer of its own that the program owns. */
typedef struct {
  int n;
  ts_array_t *leaves;
} rt_const_t;

struct ts_rt_program {
  const ts_hlo_module_t *m;
  int64_t replicas, partitions;
  ts_kernel_fn (*fusion_kernel)(void *state, const ts_hlo_instr_t *fusion); /* ts_rt_program_opts_t's */
  void *fusion_state;
  bool check_only;               /* ts_rt_program_check: lower, assign nothing */
  int ncomps;
  rt_comp_t *comps;              /* by index in m->comps */
  ts_ptrmap_t comp_index;        /* computation -> its index in m->comps */
  int entry;
  int *pos;                      /* per instruction id: position in its computation's order */
  int *gindex;                   /* per instruction id: global index */
  int ninstrs;
  const char **names;            /* by global index */
  rt_const_t *consts;            /* per instruction id (n == 0 but for constants) */
  /* entry inputs and outputs */
  int ninputs, noutputs;
  const ts_shape_t **in_shape;
  int *in_param;
  const ts_shape_t **out_shape;
  int *out_alias;                /* input leaf, -1 */
  rt_out_mode_t *out_mode;
  int *out_buf;                  /* entry buffer holding output k after the step */
  int *out_src;                  /* OUT_COPY: the buffer copied into the input (phase 2) */
  int *out_pre, *out_stage;      /* phase 1: out_pre copied to out_stage first (an input that
                                    phase 2 overwrites), -1 when none */
  /* collectives */
  int ncolls, ngroupsets;
  rt_coll_t *colls;
  rt_groupset_t *groupsets;
  size_t coll_scratch;
  ts_rt_memory_t mem;
  ts_arena_t *arena;
};

/* program.c */
int rt_comp_index(const ts_rt_program_t *p, const ts_hlo_comp_t *c);

/* collective.c: compile-time descriptors (program.c calls it per collective
 * step) and the device's communicators. */
ts_status_t rt_coll_compile(ts_rt_program_t *p, const ts_hlo_instr_t *attrs, const ts_hlo_instr_t *located,
                            ts_opcode_t kind, ts_diag_t *diag, int *out);
void rt_coll_program_free(ts_rt_program_t *p);

typedef struct rt_device_colls rt_device_colls_t;
ts_status_t rt_coll_device_create(const ts_rt_program_t *p, const ts_rt_device_opts_t *opts,
                                  rt_device_colls_t **out, ts_diag_t *diag);
void rt_coll_device_destroy(rt_device_colls_t *dc);
/* The communicators (for progress records), and how many. */
ts_coll_comm_t *const *rt_coll_device_comms(const rt_device_colls_t *dc, int *n);

/* One collective in flight: posted by rt_coll_post, finished by rt_coll_finish. */
#define RT_MAX_REQS 64 /* operands of one variadic collective, and requests */
typedef struct {
  int coll;
  int nops;
  ts_array_t in[RT_MAX_REQS];    /* operand and result views (buffers live until finish) */
  ts_array_t out[RT_MAX_REQS];
  uint64_t seq;                  /* the last post's record on the communicator, 0 if none */
  int nreq;
  ts_coll_req_t *req[RT_MAX_REQS];
  uint64_t t_post;
  bool active;
} rt_inflight_t;

ts_status_t rt_coll_post(rt_device_colls_t *dc, const ts_rt_program_t *p, int coll, const ts_array_t *in,
                         const ts_array_t *out, int nops, rt_inflight_t *f);
/* Waits for the collective (deadlines: the communicators'; the emulated
 * cross-slice link's delay) and rearranges the result. `algorithm` (may be
 * NULL) gets the algorithm the library ran (a static string from its record,
 * "" for a local copy or when unknown). */
ts_status_t rt_coll_finish(rt_device_colls_t *dc, const ts_rt_program_t *p, rt_inflight_t *f,
                           const char **algorithm);
/* Drops whatever is in flight after an error (waits briefly: the world is aborted). */
void rt_coll_cancel(rt_inflight_t *f);

uint64_t rt_now_ns(void);

/* A located error about instruction `i` of module `m` (through
 * ts_kernel_fail: "file:line:col: error: ..." when it has a location);
 * returns `st`. */
ts_status_t rt_fail(const ts_hlo_module_t *m, const ts_hlo_instr_t *i, ts_diag_t *diag, ts_status_t st,
                    const char *fmt, ...) __attribute__((format(printf, 5, 6)));

#endif
