/* MPI backend: Open MPI non-blocking point-to-point (MPI_Isend/Irecv on a
 * duplicate of MPI_COMM_WORLD) under our algorithms, and the MPI bootstrap.
 * Aborts travel on a second duplicate: every rank keeps one receive posted
 * there and polls it while it waits. */
#include "coll_internal.h"

#ifdef TS_COLL_HAVE_MPI
#include <limits.h>
#include <mpi.h>
#include <string.h>

typedef struct {
  MPI_Comm data, ctl;
  MPI_Request abort_req;
  int abort_buf;
  int rank;
} mworld_t;

static bool we_initialised;

ts_status_t ts_coll_mpi_init(int *argc, char ***argv) {
  int inited = 0, provided = 0;
  MPI_Initialized(&inited);
  if (inited) {
    MPI_Query_thread(&provided);
  } else {
    if (MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) return TS_ERR_SYSTEM;
    we_initialised = true;
  }
  if (provided < MPI_THREAD_MULTIPLE) {
    ts_log(TS_LOG_ERROR, "collectives: MPI does not provide MPI_THREAD_MULTIPLE");
    return TS_ERR_UNSUPPORTED;
  }
  return TS_OK;
}

ts_status_t ts_coll_mpi_finalize(void) {
  if (we_initialised) {
    we_initialised = false;
    MPI_Finalize();
  }
  return TS_OK;
}

/* MPI_Request is a pointer in Open MPI and an int in MPICH: keep its bytes. */
_Static_assert(sizeof(MPI_Request) <= sizeof(void *), "MPI_Request fits a pointer");
static void put_req(tp_req_t *r, MPI_Request q) {
  r->h.p = NULL;
  memcpy(&r->h, &q, sizeof q);
}
static MPI_Request get_req(const tp_req_t *r) {
  MPI_Request q;
  memcpy(&q, &r->h, sizeof q);
  return q;
}

/* Context and step in MPI's 31-bit tag space. */
static int mpi_tag(uint64_t tag) { return (int)((((tag >> 48) & 0x7fff) << 16) | (tag & 0xffff)); }

static ts_status_t m_isend(ts_coll_comm_t *c, int wpeer, const void *buf, size_t n, uint64_t tag, tp_req_t *r) {
  mworld_t *mw = c->world->priv;
  if (n > INT_MAX) return TS_ERR_UNSUPPORTED;
  MPI_Request q;
  if (MPI_Isend(buf, (int)n, MPI_BYTE, wpeer, mpi_tag(tag), mw->data, &q) != MPI_SUCCESS) return TS_ERR_REMOTE;
  put_req(r, q);
  return TS_OK;
}

static ts_status_t m_irecv(ts_coll_comm_t *c, int wpeer, void *buf, size_t n, uint64_t tag, tp_req_t *r) {
  mworld_t *mw = c->world->priv;
  if (n > INT_MAX) return TS_ERR_UNSUPPORTED;
  MPI_Request q;
  if (MPI_Irecv(buf, (int)n, MPI_BYTE, wpeer, mpi_tag(tag), mw->data, &q) != MPI_SUCCESS) return TS_ERR_REMOTE;
  put_req(r, q);
  return TS_OK;
}

static void m_test(ts_coll_comm_t *c, tp_req_t *r) {
  if (r->done) return;
  MPI_Request q = get_req(r);
  int flag = 0;
  if (MPI_Test(&q, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
    r->done = 1;
    r->st = TS_ERR_REMOTE;
    return;
  }
  if (flag) {
    r->done = 1;
    r->h.p = NULL;
  } else {
    put_req(r, q);
  }
}

static void m_cancel(ts_coll_comm_t *c, tp_req_t *r) {
  MPI_Request q = get_req(r);
  if (!r->done && q != MPI_REQUEST_NULL) {
    /* Cancel works for receives; a send that cannot be cancelled is let go. */
    MPI_Cancel(&q);
    MPI_Request_free(&q);
  }
  r->h.p = NULL;
  r->done = 1;
  r->st = TS_ERR_REMOTE;
}

static void m_send_abort(coll_world_t *w) {
  mworld_t *mw = w->priv;
  int one = 1;
  for (int i = 0; i < w->size; i++) {
    if (i == mw->rank) continue;
    MPI_Request q;
    if (MPI_Isend(&one, 1, MPI_INT, i, 1, mw->ctl, &q) == MPI_SUCCESS) MPI_Request_free(&q);
  }
}

static void m_poll_abort(coll_world_t *w) {
  mworld_t *mw = w->priv;
  if (mw->abort_req == MPI_REQUEST_NULL) return;
  int flag = 0;
  MPI_Test(&mw->abort_req, &flag, MPI_STATUS_IGNORE);
  if (flag) {
    mw->abort_req = MPI_REQUEST_NULL;
    coll_world_abort(w, TS_ERR_REMOTE, false);
  }
}

static void m_world_destroy(coll_world_t *w) {
  mworld_t *mw = w->priv;
  if (!mw) return;
  if (mw->abort_req != MPI_REQUEST_NULL) {
    MPI_Cancel(&mw->abort_req);
    MPI_Wait(&mw->abort_req, MPI_STATUS_IGNORE);
  }
  int fin = 0;
  MPI_Finalized(&fin);
  if (!fin) {
    MPI_Comm_free(&mw->data);
    MPI_Comm_free(&mw->ctl);
  }
  ts_free(mw);
}

const coll_backend_t coll_mpi_backend = {
    .name = "mpi",
    .id = TS_COLL_BACKEND_MPI,
    .isend = m_isend,
    .irecv = m_irecv,
    .test = m_test,
    .cancel = m_cancel,
    .send_abort = m_send_abort,
    .poll_abort = m_poll_abort,
    .world_destroy = m_world_destroy,
};

static ts_status_t mpi_allgather(coll_boot_t *b, const void *mine, void *all, size_t n) {
  MPI_Comm comm = *(MPI_Comm *)b->priv;
  return MPI_Allgather(mine, (int)n, MPI_BYTE, all, (int)n, MPI_BYTE, comm) == MPI_SUCCESS ? TS_OK : TS_ERR_REMOTE;
}

static void mpi_boot_destroy(coll_boot_t *b) {
  MPI_Comm_free((MPI_Comm *)b->priv);
  ts_free(b->priv);
  ts_free(b);
}

ts_status_t coll_boot_mpi(coll_boot_t **out) {
  int inited = 0;
  MPI_Initialized(&inited);
  if (!inited) return TS_ERR_INVALID_USAGE;
  coll_boot_t *b = ts_calloc(1, sizeof *b);
  MPI_Comm *comm = ts_malloc(sizeof *comm);
  if (!b || !comm) {
    ts_free(b);
    ts_free(comm);
    return TS_ERR_NOMEM;
  }
  MPI_Comm_dup(MPI_COMM_WORLD, comm);
  MPI_Comm_rank(*comm, &b->rank);
  MPI_Comm_size(*comm, &b->size);
  b->priv = comm;
  b->allgather = mpi_allgather;
  b->destroy = mpi_boot_destroy;
  *out = b;
  return TS_OK;
}

ts_status_t coll_mpi_world(coll_boot_t *b, coll_world_t **out) {
  coll_world_t *w = coll_world_new(&coll_mpi_backend, b->size, 1);
  mworld_t *mw = ts_calloc(1, sizeof *mw);
  if (!w || !mw) {
    coll_world_release(w);
    ts_free(mw);
    return TS_ERR_NOMEM;
  }
  mw->rank = b->rank;
  MPI_Comm_dup(MPI_COMM_WORLD, &mw->data);
  MPI_Comm_dup(MPI_COMM_WORLD, &mw->ctl);
  MPI_Irecv(&mw->abort_buf, 1, MPI_INT, MPI_ANY_SOURCE, 1, mw->ctl, &mw->abort_req);
  w->priv = mw;
  *out = w;
  return TS_OK;
}

#else /* no MPI in this build */

ts_status_t ts_coll_mpi_init(int *argc, char ***argv) { return TS_ERR_UNSUPPORTED; }
ts_status_t ts_coll_mpi_finalize(void) { return TS_ERR_UNSUPPORTED; }
ts_status_t coll_boot_mpi(coll_boot_t **out) { return TS_ERR_UNSUPPORTED; }
ts_status_t coll_mpi_world(coll_boot_t *b, coll_world_t **out) { return TS_ERR_UNSUPPORTED; }

#endif
