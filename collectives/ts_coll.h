/* Tessera collectives: one communicator interface over several backends
 * (in-process threads, MPI, UCX, NCCL) and the collective algorithms that run
 * on them (ring, recursive doubling, pairwise and Bruck all-to-all, direct
 * single-copy paths over shared memory or CMA, two-level versions for
 * multislice meshes), chosen from one table (table.c).
 *
 * Model. A communicator is one rank's handle on a group of ranks. Every
 * operation is posted (non-blocking), then tested or waited on with a
 * deadline; operations on one communicator run in the order they were posted,
 * and every member must post the same sequence of collectives. A collective
 * whose deadline passes aborts the communicator's world: every waiter on every
 * rank returns TS_ERR_TIMEOUT (where the deadline passed) or TS_ERR_REMOTE
 * (the other ranks) instead of hanging, and later posts fail at once.
 *
 * Counts are in elements of `type`; storage follows ts_elem_storage_bytes.
 * bf16, f16, f8*, f6* and f4* reduce in f32 and round once at the end;
 * s1..s4 / u1..u4 reduce in 32-bit integers and wrap once. Send and receive
 * buffers may be the same pointer (in place) for all-reduce and broadcast;
 * otherwise they must not overlap. Buffers belong to the caller and must stay
 * valid until the operation completes (wait returned, or test returned
 * something other than TS_INPROGRESS).
 *
 * Thread safety: a communicator is used by one thread at a time (in the
 * threads backend, each rank's communicator by its own thread);
 * ts_coll_records may be called from any thread at any time. */
#ifndef TS_COLL_H
#define TS_COLL_H

#include "ts_collective.h"
#include "ts_common.h"
#include "ts_elem.h"

/* ---- names --------------------------------------------------------------- */

typedef enum {
  TS_COLL_BACKEND_THREADS, /* N ranks as N threads of one process */
  TS_COLL_BACKEND_MPI,     /* MPI non-blocking point-to-point under our algorithms */
  TS_COLL_BACKEND_UCX,     /* UCX ucp tagged messages under our algorithms */
  TS_COLL_BACKEND_NCCL,    /* NCCL on one GPU per rank (CUDA builds only) */
  TS_COLL_BACKEND_COUNT
} ts_coll_backend_t;

const char *ts_coll_backend_name(ts_coll_backend_t b); /* "threads", "mpi", "ucx", "nccl" */
bool ts_coll_backend_from_name(const char *s, ts_coll_backend_t *out);
/* Whether this build has the backend (MPI/UCX found at configure time, NCCL
 * with CUDA). Having it does not mean this machine can run it (NCCL needs a GPU). */
bool ts_coll_backend_built(ts_coll_backend_t b);

typedef enum { TS_COLL_SUM, TS_COLL_PROD, TS_COLL_MIN, TS_COLL_MAX, TS_COLL_REDOP_COUNT } ts_coll_redop_t;
const char *ts_coll_redop_name(ts_coll_redop_t op); /* "sum", "prod", "min", "max" */

/* The kinds (ts_coll_kind_t) are common's (ts_collective.h); this library
 * runs all-reduce, all-gather, reduce-scatter, all-to-all,
 * collective-permute, broadcast, send, recv and barrier. */

/* Seconds on the monotonic clock every record and deadline uses. */
double ts_coll_now(void);

/* ---- communicators --------------------------------------------------------- */

typedef struct ts_coll_comm ts_coll_comm_t;
typedef struct ts_coll_req ts_coll_req_t;

/* In-process world of n ranks: fills comms[0..n) (rank i's handle is
 * comms[i], to be driven by one thread each). Destroy each one. */
ts_status_t ts_coll_comm_create_threads(int n, ts_coll_comm_t **comms);

/* MPI bootstrap. ts_coll_mpi_init initialises MPI with MPI_THREAD_MULTIPLE
 * (our progress thread calls MPI) unless it is initialised already;
 * ts_coll_mpi_finalize finalises it if ts_coll_mpi_init did. Both fail with
 * TS_ERR_UNSUPPORTED in builds without MPI. The world is MPI_COMM_WORLD;
 * `backend` picks the data path: MPI or UCX (worker addresses exchanged
 * over MPI). Collective over MPI_COMM_WORLD. */
ts_status_t ts_coll_mpi_init(int *argc, char ***argv);
ts_status_t ts_coll_mpi_finalize(void);
ts_status_t ts_coll_comm_create_mpi(ts_coll_backend_t backend, ts_coll_comm_t **out);

/* TCP rendezvous bootstrap: rank 0 listens on `addr` ("host:port"), the
 * others connect to it; worker addresses go through rank 0. The data path is
 * UCX (the only backend that needs no MPI). Fails with TS_ERR_TIMEOUT when
 * the world has not assembled within timeout_s. */
ts_status_t ts_coll_comm_create_tcp(const char *addr, int rank, int size, ts_coll_backend_t backend,
                                    double timeout_s, ts_coll_comm_t **out);

/* Sub-communicator of this rank's group. `groups[0..ngroups)` are the id
 * groups of replica_groups, read as `mode` says (XLA's
 * CollectiveOpGroupMode, ts_collective.h); none (ngroups 0) means one group
 * of every id. The parent's ranks are the devices, device d = replica
 * (d / num_partitions), partition (d % num_partitions); replica_count *
 * num_partitions must equal the parent's size. Every parent member calls
 * it, in the same order as its other collectives on the parent (it agrees
 * on a context id through the parent). Groups that miss this rank, or name
 * an id twice or out of range: TS_ERR_INVALID_ARGUMENT. The rank in the new
 * communicator is the position of this device in its group, in XLA's
 * order. */
ts_status_t ts_coll_comm_split(ts_coll_comm_t *parent, const ts_i64_list_t *groups, int ngroups,
                               ts_coll_group_mode_t mode, int64_t replica_count, int64_t num_partitions,
                               ts_coll_comm_t **out);

/* Expands the iota form `[G,S]<=[reshape...]T(perm...)` into G*S ids
 * (out[g*S+i] is id i of group g). nperm 0: no transpose. Returns
 * TS_ERR_INVALID_ARGUMENT if the shapes disagree or perm is no permutation. */
ts_status_t ts_coll_iota_groups(int64_t G, int64_t S, const int64_t *reshape, int nreshape, const int64_t *perm,
                                int nperm, int64_t *out);

/* Destroys a communicator (NULL is a no-op). Waits, up to the
 * communicator's timeout, for posted operations; aborts them after that. */
void ts_coll_comm_destroy(ts_coll_comm_t *c);

int ts_coll_comm_rank(const ts_coll_comm_t *c);
int ts_coll_comm_size(const ts_coll_comm_t *c);
/* The world rank of member i (the rank in the communicator created by the bootstrap). */
int ts_coll_comm_world_rank(const ts_coll_comm_t *c, int i);
ts_coll_backend_t ts_coll_comm_backend(const ts_coll_comm_t *c);

/* The deadline of every operation posted from now on, in seconds after its
 * post (default 300; TESSERA_COLL_TIMEOUT overrides the default). */
void ts_coll_comm_set_timeout(ts_coll_comm_t *c, double seconds);

/* Same-host fast paths (shared-memory eager buffers and CMA single copy for
 * MPI/UCX; direct pointers for threads): on by default; off forces the
 * point-to-point algorithms everywhere (also TESSERA_COLL_DIRECT=0). */
void ts_coll_comm_set_direct(ts_coll_comm_t *c, bool on);

/* Forces one algorithm by name for every kind it implements ("ring",
 * "recursive-doubling", "pairwise", "bruck", "direct", "direct-eager",
 * "hierarchical", ...; NULL: the table decides). An algorithm the
 * communicator cannot run there (recursive-doubling all-gather on a group
 * that is no power of two, hierarchical without slices) leaves the choice
 * to the table.
 * For tests and benchmarks. TS_ERR_INVALID_ARGUMENT for an unknown name. */
ts_status_t ts_coll_comm_force_algorithm(ts_coll_comm_t *c, const char *name);

/* Slice layout for multislice meshes: the communicator's n ranks form
 * `slices` equal slices, rank r in slice r / (n / slices), and the links
 * between slices are the slow ones. Then all-reduce, all-gather and
 * reduce-scatter run two-level ("hierarchical": inside the slice, across
 * slices among the ranks at the same position, inside again), which moves
 * 1/(n/slices) of the data across slices. Results equal the flat
 * algorithms' up to the order of the reduction (exact inputs: the same
 * bits). Collective, like ts_coll_comm_split: every member calls it with
 * the same value at the same point of its sequence of collectives (it
 * creates the slice and cross-slice sub-communicators through this one).
 * slices 1 removes the layout. TS_ERR_INVALID_ARGUMENT unless slices
 * divides the size. Forcing another algorithm (ts_coll_comm_force_algorithm)
 * runs it flat. */
ts_status_t ts_coll_comm_set_slices(ts_coll_comm_t *c, int slices);
/* The number of slices (1: no layout). */
int ts_coll_comm_slices(const ts_coll_comm_t *c);

/* Aborts the world this communicator belongs to: every waiter on every rank
 * returns an error (`why` here, TS_ERR_REMOTE on the other ranks). */
void ts_coll_comm_abort(ts_coll_comm_t *c, ts_status_t why);
/* TS_OK, or the status the world was aborted with. */
ts_status_t ts_coll_comm_status(const ts_coll_comm_t *c);

/* Memory for collective buffers. In a process world whose ranks share this
 * host, the bytes live in a shared mapping that the other ranks map too, so
 * the direct paths read peers' inputs and write peers' outputs with plain
 * loads and stores (one copy, fused with the reduction) instead of a kernel
 * copy; elsewhere it is ordinary memory. Any buffer works with every
 * operation; these are just faster. The memory is page-aligned and
 * uninitialised. Free it with ts_coll_free on a communicator of the same
 * world, before the world's last communicator is destroyed (NULL: no-op). */
ts_status_t ts_coll_alloc(ts_coll_comm_t *c, size_t bytes, void **out);
void ts_coll_free(ts_coll_comm_t *c, void *p);

/* ---- operations ------------------------------------------------------------ */

/* all-reduce: recv[i] = op over ranks of send[i], i < count. */
ts_status_t ts_coll_allreduce_post(ts_coll_comm_t *c, const void *send, void *recv, size_t count, ts_elem_t type,
                                   ts_coll_redop_t op, ts_coll_req_t **req);
/* all-gather: recv (size*sendcount) = the ranks' send blocks in rank order. */
ts_status_t ts_coll_allgather_post(ts_coll_comm_t *c, const void *send, void *recv, size_t sendcount,
                                   ts_elem_t type, ts_coll_req_t **req);
/* reduce-scatter: send holds size*recvcount; rank r gets block r of the reduction. */
ts_status_t ts_coll_reduce_scatter_post(ts_coll_comm_t *c, const void *send, void *recv, size_t recvcount,
                                        ts_elem_t type, ts_coll_redop_t op, ts_coll_req_t **req);
/* all-to-all: block j (count elements) of send goes to rank j; recv block j comes from rank j. */
ts_status_t ts_coll_alltoall_post(ts_coll_comm_t *c, const void *send, void *recv, size_t count, ts_elem_t type,
                                  ts_coll_req_t **req);
/* collective-permute: pairs[k] = {source, target} (communicator ranks, XLA's
 * source_target_pairs); each rank appears at most once as a source and once
 * as a target. A rank that is no target gets zeros. */
ts_status_t ts_coll_permute_post(ts_coll_comm_t *c, const void *send, void *recv, size_t count, ts_elem_t type,
                                 const int64_t (*pairs)[2], int npairs, ts_coll_req_t **req);
/* broadcast: recv on every rank = send of `root` (send is read only on root). */
ts_status_t ts_coll_broadcast_post(ts_coll_comm_t *c, const void *send, void *recv, size_t count, ts_elem_t type,
                                   int root, ts_coll_req_t **req);
ts_status_t ts_coll_send_post(ts_coll_comm_t *c, const void *buf, size_t count, ts_elem_t type, int peer,
                              ts_coll_req_t **req);
ts_status_t ts_coll_recv_post(ts_coll_comm_t *c, void *buf, size_t count, ts_elem_t type, int peer,
                              ts_coll_req_t **req);
ts_status_t ts_coll_barrier_post(ts_coll_comm_t *c, ts_coll_req_t **req);

/* TS_OK when done, TS_INPROGRESS while running, or the operation's error.
 * Never blocks. */
ts_status_t ts_coll_test(ts_coll_req_t *req);
/* Blocks until the operation is done or `timeout_s` seconds pass (a negative
 * value: until the operation's own deadline). On timeout the world is aborted
 * and TS_ERR_TIMEOUT returned. Frees the request either way. */
ts_status_t ts_coll_wait(ts_coll_req_t *req, double timeout_s);
/* Frees a request that will not be waited on (it completes in the
 * background; its buffers must stay valid until then). NULL is a no-op. */
void ts_coll_req_free(ts_coll_req_t *req);

/* Blocking forms: post + wait until the operation's deadline. */
ts_status_t ts_coll_allreduce(ts_coll_comm_t *c, const void *send, void *recv, size_t count, ts_elem_t type,
                              ts_coll_redop_t op);
ts_status_t ts_coll_barrier(ts_coll_comm_t *c);

/* ---- records for the hang detector -------------------------------------- */

typedef enum {
  TS_COLL_POSTED,    /* posted by the caller, not yet running */
  TS_COLL_STARTED,   /* the algorithm is running */
  TS_COLL_COMPLETED, /* finished with TS_OK */
  TS_COLL_FAILED,    /* finished with an error (status says which) */
} ts_coll_state_t;

/* One collective as this rank saw it. `seq` counts posts on the communicator
 * from 1 and names the same collective on every member (members post the
 * same sequence), so comparing the records of all ranks shows who is behind.
 * Times are ts_coll_now() seconds, 0 when the state was not reached. */
typedef struct {
  uint64_t seq;
  ts_coll_kind_t kind;
  ts_coll_state_t state;
  ts_status_t status;   /* TS_OK unless FAILED */
  ts_elem_t type;
  ts_coll_redop_t redop;
  uint64_t bytes;       /* nccl-tests' S for the kind (send/recv: the buffer) */
  int32_t peer;         /* send/recv peer or broadcast root (communicator rank), else -1 */
  int32_t waiting_on;   /* world rank the running algorithm waits for now, -1 if none/unknown */
  const char *algorithm; /* static string, "" until started */
  double t_posted, t_started, t_completed;
} ts_coll_record_t;

/* Records kept per communicator (older ones are overwritten). */
#define TS_COLL_RECORDS 64

/* Copies up to `max` of the newest records, oldest first, into out; returns
 * how many. Lock-free for the reader (a seqlock per slot): safe from another
 * thread (a hang detector) while the communicator runs. */
size_t ts_coll_records(const ts_coll_comm_t *c, ts_coll_record_t *out, size_t max);
/* Context id of the communicator (equal on every member; names it in digests). */
uint32_t ts_coll_comm_context(const ts_coll_comm_t *c);

#endif
