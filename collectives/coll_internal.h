/* Collectives internals: the backend interface table, the world and
 * communicator structs, the operation descriptor the algorithms run on, and
 * the helpers they share (waiting with a deadline, scratch, reduction). */
#ifndef COLL_INTERNAL_H
#define COLL_INTERNAL_H

#include "ts_coll.h"
#include "ts_env.h"

#include <pthread.h>
#include <stdatomic.h>
#include <sys/types.h>

typedef struct coll_world coll_world_t;
typedef struct coll_op coll_op_t;
typedef struct direct direct_t;

/* One point-to-point transfer in flight. `peer` is a world rank. */
typedef struct {
  int done;
  ts_status_t st;
  int peer;
  size_t bytes;
  union {
    void *p;
    intptr_t i;
  } h;
} tp_req_t;

/* A backend: point-to-point transfers between world ranks (tags are unique
 * per communicator context and step, see coll_tag), abort notification, and
 * optionally whole collectives (NCCL runs its own). */
typedef struct {
  const char *name;
  ts_coll_backend_t id;
  ts_status_t (*isend)(ts_coll_comm_t *c, int wpeer, const void *buf, size_t n, uint64_t tag, tp_req_t *r);
  ts_status_t (*irecv)(ts_coll_comm_t *c, int wpeer, void *buf, size_t n, uint64_t tag, tp_req_t *r);
  /* Makes progress; sets r->done (and r->st on failure). Never blocks. */
  void (*test)(ts_coll_comm_t *c, tp_req_t *r);
  /* Withdraws an unfinished transfer after an abort; r is dead afterwards. */
  void (*cancel)(ts_coll_comm_t *c, tp_req_t *r);
  /* Tells the other ranks the world is aborted (NULL: shared memory tells them). */
  void (*send_abort)(coll_world_t *w);
  /* Looks for an abort sent by another rank (NULL: nothing to poll). */
  void (*poll_abort)(coll_world_t *w);
  /* Runs a whole collective itself (NCCL), or NULL for our algorithms. */
  ts_status_t (*run)(ts_coll_comm_t *c, coll_op_t *op);
  /* Per-communicator setup/teardown for `run` backends (NULL: none). */
  ts_status_t (*comm_init)(ts_coll_comm_t *c);
  void (*comm_fini)(ts_coll_comm_t *c);
  void (*world_destroy)(coll_world_t *w);
} coll_backend_t;

extern const coll_backend_t coll_threads_backend;
extern const coll_backend_t coll_mpi_backend;
extern const coll_backend_t coll_ucx_backend;
extern const coll_backend_t coll_nccl_backend;

/* Same-host shared memory for the direct paths of process worlds (shm.c):
 * one segment per world, rows [slot][world rank]. */
#define COLL_DIRECT_SLOTS 16
/* Each (slot, rank) row has two eager areas of this size, used alternately:
 * an eager operation then needs one flag barrier, not two (see direct.c). */
#define COLL_EAGER_BYTES (256 * 1024)

typedef struct {
  _Atomic uint64_t flag; /* (generation << 40) | phase */
  uint64_t send, recv;   /* addresses published for this collective (owner's space) */
  uint64_t sreg, rreg;   /* region keys of send/recv (coll_region_t), 0: not in one */
  uint64_t soff, roff;   /* their offsets in those regions */
  /* eager-sized operations, by barrier phase parity: bit 0 this rank's
   * buffers are in regions, bit 1 it staged its input (direct.c) */
  _Atomic uint8_t how[2];
  /* 1 while this rank loads and stores its peers' buffers (direct.c) */
  _Atomic uint8_t busy;
  char pad[64 - 59];
} dslot_t;

/* A buffer from ts_coll_alloc in a process world with a node segment: a
 * memfd mapping that the other processes of the host open through
 * /proc/<pid>/fd/<fd> and map as well, so the direct paths load and store
 * it without a kernel copy. key = fd << 32 | id (id unique per process, never 0). */
typedef struct coll_region {
  struct coll_region *next;
  char *base;
  size_t bytes;
  int fd;
  uint32_t id;
} coll_region_t;

/* A peer's region mapped here. Pinned while a collective uses it. */
typedef struct {
  int wrank;
  int pins;
  uint64_t key;
  char *base;
  size_t bytes;
  uint64_t used; /* LRU stamp */
} coll_peermap_t;
#define COLL_PEERMAPS 256

typedef struct {
  void *base;
  size_t bytes;
  char name[64];
  int nranks;
  pid_t *pids;       /* world rank -> pid */
  _Atomic int *abort; /* world-wide abort word, in the segment */
  /* regions of this process and peers' regions mapped here (under lock) */
  pthread_mutex_t lock;
  coll_region_t *regions;
  uint32_t next_id;
  uint64_t clock;
  coll_peermap_t maps[COLL_PEERMAPS];
} coll_node_t;

/* What the processes (or threads) of one world share. One per process for
 * MPI/UCX/NCCL; one for all threads of an in-process world. */
struct coll_world {
  const coll_backend_t *be;
  int size;            /* world size */
  _Atomic int refs;
  _Atomic int aborted; /* 0, or the ts_status_t the world was aborted with */
  bool same_space;     /* threads: every rank's buffers are directly addressable */
  bool oversub;        /* more of its ranks on this host than this process has cores */
  coll_node_t *node;   /* process worlds on one host with CMA, else NULL */
  uint32_t *next_ctx;  /* per world rank (threads) or [0] (processes) */
  uint32_t *slots_used; /* bitmask of direct slots in use, same indexing */
  pthread_mutex_t lock;
  void *priv;          /* backend state */
  void *dreg;          /* threads: shared direct-slot arrays (direct.c) */
};

/* Thresholds an algorithm runs with, from its row of the table (table.c).
 * Only the direct paths have any. Per-rank choices: members may differ. */
typedef struct {
  uint64_t nt_from;    /* S from which outputs are written with streaming stores */
  uint64_t stage_upto; /* input bytes up to which an eager rank stages its input */
} coll_tune_t;

/* The operation the algorithms run. Counts as in ts_coll.h; after the
 * up-cast of narrow types, `type` is the type reduced in. */
struct coll_op {
  ts_coll_kind_t kind;
  const void *send;
  void *recv;
  size_t count;
  ts_elem_t type;
  size_t esize;
  ts_coll_redop_t redop;
  int root; /* broadcast root, send/recv peer (communicator rank) */
  int npairs;
  int64_t (*pairs)[2];
  double deadline;
  uint64_t seq;
  coll_tune_t tune; /* the chosen row's (execute sets it) */
  /* up-cast: the caller's buffers and type when type != user_type */
  ts_elem_t user_type;
  const void *user_send;
  void *user_recv;
};

struct ts_coll_req {
  _Atomic int refs;
  _Atomic int state;  /* ts_coll_state_t */
  _Atomic int status; /* ts_status_t when done */
  ts_coll_comm_t *comm;
  coll_op_t op;
  struct ts_coll_req *next;
};

/* Seqlocked record slot. */
typedef struct {
  _Atomic uint32_t version;
  ts_coll_record_t r;
} rec_slot_t;

struct ts_coll_comm {
  coll_world_t *world;
  const coll_backend_t *be;
  int rank, size;
  int *wranks;       /* member -> world rank */
  int wrank;         /* this rank's world rank */
  uint32_t ctx;
  double timeout_s;
  bool direct_on;
  const char *forced; /* forced algorithm name or NULL */
  /* execution: FIFO of posted operations, one executor at a time */
  pthread_mutex_t qlock;
  pthread_cond_t qcond, done_cond;
  ts_coll_req_t *qhead, *qtail;
  bool running, stop;
  pthread_t progress;
  bool progress_started;
  uint64_t next_seq;
  /* records */
  pthread_mutex_t rec_lock;
  rec_slot_t rec[TS_COLL_RECORDS];
  rec_slot_t *cur_rec;
  int last_waiting;
  /* scratch, reused across calls */
  void *scratch[5]; /* 0-2 algorithms, 3-4 the up-cast of narrow types */
  size_t scratch_bytes[5];
  /* direct (same-host) path: NULL when not available */
  direct_t *direct;
  int dslot; /* slot index in the node segment (process worlds), -1 if none */
  /* slice layout (ts_coll_comm_set_slices): 0 or 1 none; else the number of
   * slices and the sub-communicators the hierarchical algorithms run on */
  int slices;
  ts_coll_comm_t *intra; /* the members of this rank's slice */
  ts_coll_comm_t *inter; /* the members at this rank's position in every slice */
  void *bpriv; /* backend per-communicator state (NCCL) */
};

/* ---- comm.c helpers for algorithms and backends ---- */

/* 64-bit tag of a message of this communicator: context (bits 48-62),
 * sender's world rank (32-47) and step (0-15). No sequence number: every
 * transport matches messages of one (source, tag) in order, and members post
 * operations in the same order. MPI keeps context and step (coll_mpi_tag). */
static inline uint64_t coll_tag(const ts_coll_comm_t *c, int wsrc, uint32_t step) {
  return ((uint64_t)(c->ctx & 0x7fff) << 48) | ((uint64_t)(wsrc & 0xffff) << 32) | (step & 0xffff);
}
/* The step of send/recv messages (kept apart from collective steps). */
#define COLL_STEP_P2P 0xffffu

ts_status_t coll_isend(ts_coll_comm_t *c, coll_op_t *op, int peer, const void *buf, size_t n, uint32_t step,
                       tp_req_t *r);
ts_status_t coll_irecv(ts_coll_comm_t *c, coll_op_t *op, int peer, void *buf, size_t n, uint32_t step,
                       tp_req_t *r);
/* Waits for every request up to op->deadline, watching the abort flag.
 * On error the unfinished ones are cancelled. */
ts_status_t coll_waitall(ts_coll_comm_t *c, coll_op_t *op, tp_req_t *r, int n);
/* One exchange: send to `to`, receive from `from`, wait for both. */
ts_status_t coll_sendrecv(ts_coll_comm_t *c, coll_op_t *op, int to, const void *sbuf, size_t sn, int from,
                          void *rbuf, size_t rn, uint32_t step);
/* Spin-then-yield backoff used by every polling loop. */
void coll_backoff(unsigned spins);
/* Tells the backoff (and w->oversub) how many ranks of world w run on this host. */
void coll_note_ranks_here(coll_world_t *w, int nranks);
/* Checks abort and deadline; returns TS_OK or the error (and aborts the world on deadline). */
ts_status_t coll_check(ts_coll_comm_t *c, const coll_op_t *op);
/* Only the abort flags in memory (no transport poll, no clock): for the
 * first spins of shared-memory waits, which coll_check follows up. */
ts_status_t coll_check_abort(ts_coll_comm_t *c);
void coll_world_abort(coll_world_t *w, ts_status_t why, bool tell_peers);
/* A scratch buffer of at least `bytes`, reused across calls (index 0..2 for algorithms). */
void *coll_scratch(ts_coll_comm_t *c, int idx, size_t bytes);
void coll_note_waiting(ts_coll_comm_t *c, int wrank);

/* World creation shared by the bootstraps. */
coll_world_t *coll_world_new(const coll_backend_t *be, int size, int nctx_rows);
void coll_world_release(coll_world_t *w);
/* A communicator over all of `w` for world rank `wrank`. */
ts_status_t coll_comm_new_world(coll_world_t *w, int wrank, ts_coll_comm_t **out);

/* ---- reduce.c ---- */

/* dst[i] = dst[i] op src[i] for n elements of `type` (a reduce type: f32,
 * f64, 8/16/32/64-bit ints, pred, c64, c128). */
void coll_reduce(void *dst, const void *src, size_t n, ts_elem_t type, ts_coll_redop_t op);
/* memcpy, with non-temporal stores when `nt` (outputs larger than the
 * caches: no read-for-ownership, no eviction of the inputs). Callers that
 * used nt issue coll_store_fence() before publishing that they are done. */
void coll_copy(void *restrict dst, const void *restrict src, size_t n, bool nt);
void coll_store_fence(void);
/* dst[k][i] = a[i] + b[i] (f32) for every k, with streaming stores; false
 * (nothing written) when this build or the alignment does not allow it. */
bool coll_sum_f32_stream(char *const *dst, int ndst, const float *a, const float *b, size_t n);
/* dst[i] = a[i] op b[i]. */
void coll_reduce3(void *dst, const void *a, const void *b, size_t n, ts_elem_t type, ts_coll_redop_t op);
/* The type a narrow type reduces in (f32 for narrow floats, s32/u32 for
 * sub-byte ints), or the type itself. */
ts_elem_t coll_reduce_type(ts_elem_t t);
bool coll_redop_ok(ts_elem_t t, ts_coll_redop_t op);

/* ---- table.c: the one place algorithms are chosen ---- */

typedef ts_status_t (*coll_algo_fn)(ts_coll_comm_t *c, coll_op_t *op);
typedef struct {
  const char *name;
  coll_algo_fn fn;
  coll_tune_t tune;
} coll_algo_t;
/* The algorithm for op on c. */
coll_algo_t coll_choose(ts_coll_comm_t *c, const coll_op_t *op);
bool coll_algo_known(const char *name);
/* nccl-tests' S of an operation, in bytes. */
uint64_t coll_op_bytes(const ts_coll_comm_t *c, const coll_op_t *op);

/* ---- algorithms (ring.c, rd.c, p2p.c, direct.c) ---- */

ts_status_t coll_ring_allreduce(ts_coll_comm_t *c, coll_op_t *op);
ts_status_t coll_ring_allgather(ts_coll_comm_t *c, coll_op_t *op);
ts_status_t coll_ring_reduce_scatter(ts_coll_comm_t *c, coll_op_t *op);
ts_status_t coll_rd_allreduce(ts_coll_comm_t *c, coll_op_t *op);
ts_status_t coll_rd_allgather(ts_coll_comm_t *c, coll_op_t *op);
ts_status_t coll_pairwise_alltoall(ts_coll_comm_t *c, coll_op_t *op);
ts_status_t coll_bruck_alltoall(ts_coll_comm_t *c, coll_op_t *op);
ts_status_t coll_p2p_permute(ts_coll_comm_t *c, coll_op_t *op);
ts_status_t coll_binomial_broadcast(ts_coll_comm_t *c, coll_op_t *op);
ts_status_t coll_p2p_send(ts_coll_comm_t *c, coll_op_t *op);
ts_status_t coll_p2p_recv(ts_coll_comm_t *c, coll_op_t *op);
ts_status_t coll_dissemination_barrier(ts_coll_comm_t *c, coll_op_t *op);
ts_status_t coll_direct_run(ts_coll_comm_t *c, coll_op_t *op);
ts_status_t coll_direct_eager(ts_coll_comm_t *c, coll_op_t *op);
ts_status_t coll_direct_barrier(ts_coll_comm_t *c, coll_op_t *op);

/* ---- hier.c: two-level algorithms over the slice layout ---- */

ts_status_t coll_hier_allreduce(ts_coll_comm_t *c, coll_op_t *op);
ts_status_t coll_hier_allgather(ts_coll_comm_t *c, coll_op_t *op);
ts_status_t coll_hier_reduce_scatter(ts_coll_comm_t *c, coll_op_t *op);

/* ---- direct.c: same-host single-copy paths ---- */

struct direct {
  int n;
  dslot_t **slot;     /* member -> its slot (mapped here) */
  char **eager;       /* member -> its two eager areas mapped here (process worlds), or NULL */
  pid_t *pid;         /* member -> pid (process worlds) */
  bool same_space;
  uint64_t gen;       /* generation tag in flags (the context id + 1) */
  uint64_t phase;
  uint64_t eager_ops; /* eager operations so far: picks the eager area */
  void *shared;       /* threads: the shared slot array (refcounted by the world) */
  /* per operation: members' send/recv as local pointers, NULL where only
   * CMA reaches them */
  const char **src;
  char **dst;
  /* the peer regions last mapped, [2 * member + (0 send, 1 recv)]: kept
   * pinned until a member publishes another one, so that a collective on
   * the same buffers takes no lock (key 0, pin -1: none) */
  uint64_t *mkey;
  char **mbase;
  size_t *mbytes;
  int *pin;
};

/* Sets up c->direct when the world allows it (threads always; process worlds
 * on one host with a free slot). Not an error when it does not. */
ts_status_t coll_direct_init(ts_coll_comm_t *c);
void coll_direct_fini(ts_coll_comm_t *c);
bool coll_direct_eager_fits(const ts_coll_comm_t *c, const coll_op_t *op);

/* ---- shm.c: node segment and CMA ---- */

ts_status_t coll_node_create(coll_world_t *w, int wrank, const char *name, bool creator);
void coll_node_destroy(coll_world_t *w, bool unlink_it);
/* The region of this process holding [p, p+n), as key and offset; false if none. */
bool coll_region_find(coll_node_t *nd, const void *p, size_t n, uint64_t *key, uint64_t *off);
/* Maps (or finds mapped) region `key` of world rank `wrank` and pins it:
 * returns its pin index, or -1 when it cannot be mapped (the caller falls
 * back to CMA). base and bytes describe the mapping here. */
int coll_region_map(coll_node_t *nd, int wrank, uint64_t key, char **base, size_t *bytes);
void coll_region_unpin(coll_node_t *nd, int pin);
/* Copies n bytes between this process and process `pid` (CMA). */
ts_status_t coll_cma_read(pid_t pid, const void *remote, void *local, size_t n);
ts_status_t coll_cma_write(pid_t pid, void *remote, const void *local, size_t n);

/* ---- bootstrap.c: what process worlds are assembled with ---- */

typedef struct coll_boot coll_boot_t;
struct coll_boot {
  int rank, size;
  /* Gathers n bytes from every rank into all[rank*n ..] (all ranks). */
  ts_status_t (*allgather)(coll_boot_t *b, const void *mine, void *all, size_t n);
  void (*destroy)(coll_boot_t *b);
  void *priv;
};
ts_status_t coll_boot_tcp(const char *addr, int rank, int size, double timeout_s, coll_boot_t **out);
ts_status_t coll_boot_mpi(coll_boot_t **out);
/* Common part of process worlds: node segment when every rank shares this
 * host and CMA works. */
ts_status_t coll_world_setup_node(coll_world_t *w, coll_boot_t *b, int wrank);

/* Backend world constructors (mpi.c, ucx.c, nccl.c). */
ts_status_t coll_mpi_world(coll_boot_t *b, coll_world_t **out);
ts_status_t coll_ucx_world(coll_boot_t *b, coll_world_t **out);
ts_status_t coll_nccl_world(coll_boot_t *b, coll_world_t **out);

#endif
