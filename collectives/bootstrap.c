/* Assembling process worlds: the TCP rendezvous (rank 0 listens, everyone
 * else connects; allgathers go through rank 0), the node segment when every
 * rank is on this host and CMA works, and the create functions that tie a
 * bootstrap to a backend. Every socket wait has a deadline. */
#define _GNU_SOURCE
#include "coll_internal.h"

#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <unistd.h>

/* ---- TCP rendezvous --------------------------------------------------------- */

typedef struct {
  int listen_fd;
  int *fds; /* rank 0: one per peer (index = rank); others: fds[0] = to rank 0 */
  double timeout_s;
} tcp_boot_t;

static ts_status_t wait_fd(int fd, short ev, double deadline) {
  for (;;) {
    double left = deadline - ts_coll_now();
    if (left <= 0) return TS_ERR_TIMEOUT;
    struct pollfd p = {fd, ev, 0};
    int r = poll(&p, 1, (int)(left * 1000) + 1);
    if (r > 0) return TS_OK;
    if (r < 0 && errno != EINTR) return TS_ERR_SYSTEM;
  }
}

static ts_status_t io_all(int fd, void *buf, size_t n, bool writing, double deadline) {
  char *p = buf;
  while (n) {
    TS_CHECK(wait_fd(fd, writing ? POLLOUT : POLLIN, deadline));
    ssize_t k = writing ? send(fd, p, n, MSG_NOSIGNAL) : recv(fd, p, n, 0);
    if (k == 0) return TS_ERR_REMOTE;
    if (k < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return TS_ERR_REMOTE;
    }
    p += k;
    n -= (size_t)k;
  }
  return TS_OK;
}

static ts_status_t tcp_allgather(coll_boot_t *b, const void *mine, void *all, size_t n) {
  tcp_boot_t *t = b->priv;
  double deadline = ts_coll_now() + t->timeout_s;
  char *out = all;
  if (b->rank == 0) {
    memcpy(out, mine, n);
    for (int r = 1; r < b->size; r++) TS_CHECK(io_all(t->fds[r], out + (size_t)r * n, n, false, deadline));
    for (int r = 1; r < b->size; r++) TS_CHECK(io_all(t->fds[r], out, (size_t)b->size * n, true, deadline));
    return TS_OK;
  }
  TS_CHECK(io_all(t->fds[0], (void *)(uintptr_t)mine, n, true, deadline));
  return io_all(t->fds[0], out, (size_t)b->size * n, false, deadline);
}

static void tcp_destroy(coll_boot_t *b) {
  tcp_boot_t *t = b->priv;
  if (t) {
    if (t->listen_fd >= 0) close(t->listen_fd);
    for (int i = 0; i < b->size; i++)
      if (t->fds[i] >= 0) close(t->fds[i]);
    ts_free(t->fds);
    ts_free(t);
  }
  ts_free(b);
}

static ts_status_t split_addr(const char *addr, char *host, size_t hn, char *port, size_t pn) {
  const char *colon = strrchr(addr, ':');
  if (!colon || colon == addr || !colon[1] || (size_t)(colon - addr) >= hn || strlen(colon + 1) >= pn)
    return TS_ERR_INVALID_ARGUMENT;
  memcpy(host, addr, (size_t)(colon - addr));
  host[colon - addr] = 0;
  strcpy(port, colon + 1);
  return TS_OK;
}

ts_status_t coll_boot_tcp(const char *addr, int rank, int size, double timeout_s, coll_boot_t **out) {
  char host[256], port[32];
  if (!addr || rank < 0 || size <= 0 || rank >= size || timeout_s <= 0) return TS_ERR_INVALID_ARGUMENT;
  TS_CHECK(split_addr(addr, host, sizeof host, port, sizeof port));
  struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE}, *ai;
  if (getaddrinfo(host, port, &hints, &ai) != 0) return TS_ERR_INVALID_ARGUMENT;
  coll_boot_t *b = ts_calloc(1, sizeof *b);
  tcp_boot_t *t = ts_calloc(1, sizeof *t);
  if (t) t->fds = ts_malloc((size_t)size * sizeof *t->fds);
  if (!b || !t || !t->fds) {
    freeaddrinfo(ai);
    ts_free(b);
    if (t) ts_free(t->fds);
    ts_free(t);
    return TS_ERR_NOMEM;
  }
  for (int i = 0; i < size; i++) t->fds[i] = -1;
  t->listen_fd = -1;
  t->timeout_s = timeout_s;
  b->rank = rank;
  b->size = size;
  b->priv = t;
  b->allgather = tcp_allgather;
  b->destroy = tcp_destroy;
  double deadline = ts_coll_now() + timeout_s;
  ts_status_t st = TS_OK;
  int one = 1;
  if (rank == 0) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    t->listen_fd = fd;
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, size) != 0) {
      ts_log(TS_LOG_ERROR, "collectives: cannot listen on %s: %s", addr, strerror(errno));
      st = TS_ERR_SYSTEM;
    }
    for (int got = 1; got < size && st == TS_OK; got++) {
      st = wait_fd(fd, POLLIN, deadline);
      if (st) break;
      int c = accept(fd, NULL, NULL);
      if (c < 0) {
        st = TS_ERR_SYSTEM;
        break;
      }
      setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      int32_t peer = -1;
      st = io_all(c, &peer, sizeof peer, false, deadline);
      if (st == TS_OK && (peer <= 0 || peer >= size || t->fds[peer] >= 0)) st = TS_ERR_REMOTE;
      if (st) {
        close(c);
        break;
      }
      t->fds[peer] = c;
    }
  } else {
    /* rank 0 may not listen yet: retry until the deadline */
    for (;;) {
      int fd = socket(AF_INET, SOCK_STREAM, 0);
      if (fd < 0) {
        st = TS_ERR_SYSTEM;
        break;
      }
      if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        t->fds[0] = fd;
        int32_t me = rank;
        st = io_all(fd, &me, sizeof me, true, deadline);
        break;
      }
      close(fd);
      if (ts_coll_now() > deadline) {
        st = TS_ERR_TIMEOUT;
        break;
      }
      usleep(20000);
    }
  }
  freeaddrinfo(ai);
  if (st) {
    if (st == TS_ERR_TIMEOUT)
      ts_log(TS_LOG_ERROR, "collectives: TCP rendezvous at %s: world of %d not assembled within %.1f s", addr,
             size, timeout_s);
    tcp_destroy(b);
    return st;
  }
  *out = b;
  return TS_OK;
}

/* ---- the node segment ------------------------------------------------------- */

static volatile uint64_t cma_probe = 0x5453434f4c4c4d41ull;

typedef struct {
  char host[64];
  int32_t pid;
  int32_t ok;
  uint64_t probe_addr;
  uint64_t nonce;
} node_info_t;

ts_status_t coll_world_setup_node(coll_world_t *w, coll_boot_t *b, int wrank) {
  if (ts_env_int(TS_ENV_COLL_SHM, 1) == 0 || w->size > 4096) return TS_OK;
  int n = b->size;
  node_info_t me = {0}, *all = ts_calloc((size_t)n, sizeof *all);
  if (!all) return TS_ERR_NOMEM;
  gethostname(me.host, sizeof me.host - 1);
  me.pid = (int32_t)getpid();
  me.probe_addr = (uint64_t)(uintptr_t)&cma_probe;
  me.nonce = ((uint64_t)getpid() << 20) ^ (uint64_t)(ts_coll_now() * 1e6);
  ts_status_t st = b->allgather(b, &me, all, sizeof me);
  if (st) goto out;
  bool one_host = true;
  for (int i = 0; i < n; i++) one_host &= strcmp(all[i].host, all[0].host) == 0;
  if (!one_host) goto out; /* multi-host worlds use the point-to-point algorithms */
  char name[64];
  snprintf(name, sizeof name, "/tessera-%d-%llx", (int)all[0].pid, (unsigned long long)all[0].nonce);
  /* rank 0 creates, then the others open; every step agrees through allgather */
  me.ok = wrank == 0 ? coll_node_create(w, wrank, name, true) == TS_OK : 1;
  if ((st = b->allgather(b, &me, all, sizeof me))) goto out;
  bool ok = all[0].ok;
  if (ok && wrank != 0) me.ok = coll_node_create(w, wrank, name, false) == TS_OK;
  if (ok && wrank != 0 && me.ok) {
    uint64_t v = 0;
    int peer = (wrank + 1) % n;
    me.ok = coll_cma_read(all[peer].pid, (const void *)(uintptr_t)all[peer].probe_addr, &v, sizeof v) == TS_OK &&
            v == cma_probe;
  }
  if ((st = b->allgather(b, &me, all, sizeof me))) goto out;
  for (int i = 0; i < n; i++) ok &= all[i].ok != 0;
  if (!ok) {
    if (w->node) ts_log(TS_LOG_INFO, "collectives: no same-host direct path (shared memory or CMA unavailable)");
    coll_node_destroy(w, wrank == 0);
    goto out;
  }
  for (int i = 0; i < n; i++) w->node->pids[i] = all[i].pid;
  coll_note_ranks_here(w, n);
  if (wrank == 0) shm_unlink(name); /* everyone has it mapped: nothing left behind on a crash */
out:
  ts_free(all);
  return st;
}

/* ---- create ------------------------------------------------------------------ */

static ts_status_t world_from_boot(coll_boot_t *b, ts_coll_backend_t backend, ts_coll_comm_t **out) {
  coll_world_t *w = NULL;
  ts_status_t st;
  switch (backend) {
  case TS_COLL_BACKEND_MPI: st = coll_mpi_world(b, &w); break;
  case TS_COLL_BACKEND_UCX: st = coll_ucx_world(b, &w); break;
  case TS_COLL_BACKEND_NCCL: st = coll_nccl_world(b, &w); break;
  default: st = TS_ERR_INVALID_ARGUMENT; break;
  }
  if (st) return st;
  if (backend != TS_COLL_BACKEND_NCCL) st = coll_world_setup_node(w, b, b->rank);
  if (st == TS_OK) st = coll_comm_new_world(w, b->rank, out);
  coll_world_release(w);
  return st;
}

ts_status_t ts_coll_comm_create_mpi(ts_coll_backend_t backend, ts_coll_comm_t **out) {
  *out = NULL;
  coll_boot_t *b;
  TS_CHECK(coll_boot_mpi(&b));
  ts_status_t st = world_from_boot(b, backend, out);
  b->destroy(b);
  return st;
}

ts_status_t ts_coll_comm_create_tcp(const char *addr, int rank, int size, ts_coll_backend_t backend,
                                    double timeout_s, ts_coll_comm_t **out) {
  *out = NULL;
  if (backend == TS_COLL_BACKEND_THREADS || backend == TS_COLL_BACKEND_MPI) return TS_ERR_INVALID_ARGUMENT;
  coll_boot_t *b;
  TS_CHECK(coll_boot_tcp(addr, rank, size, timeout_s, &b));
  ts_status_t st = world_from_boot(b, backend, out);
  b->destroy(b);
  return st;
}
