/* The node segment shared by the processes of one world on one host (POSIX
 * shared memory: a header with the world-wide abort word, then one row per
 * (direct slot, world rank): a flag slot and an eager area), and CMA single
 * copies between those processes (process_vm_readv/writev). */
#define _GNU_SOURCE
#include "coll_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

static size_t node_bytes(int nranks) {
  return 64 + (size_t)COLL_DIRECT_SLOTS * (size_t)nranks * (sizeof(dslot_t) + COLL_EAGER_BYTES);
}

ts_status_t coll_node_create(coll_world_t *w, int wrank, const char *name, bool creator) {
  coll_node_t *nd = ts_calloc(1, sizeof *nd);
  if (!nd) return TS_ERR_NOMEM;
  nd->nranks = w->size;
  nd->bytes = node_bytes(w->size);
  snprintf(nd->name, sizeof nd->name, "%s", name);
  int fd = shm_open(name, creator ? O_RDWR | O_CREAT | O_EXCL : O_RDWR, 0600);
  if (fd < 0) {
    ts_log(TS_LOG_WARN, "collectives: shm_open(%s): %s; no shared-memory path", name, strerror(errno));
    ts_free(nd);
    return TS_ERR_SYSTEM;
  }
  if (creator && ftruncate(fd, (off_t)nd->bytes) != 0) {
    ts_log(TS_LOG_WARN, "collectives: ftruncate(%s): %s", name, strerror(errno));
    close(fd);
    shm_unlink(name);
    ts_free(nd);
    return TS_ERR_SYSTEM;
  }
  nd->base = mmap(NULL, nd->bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (nd->base == MAP_FAILED) {
    ts_log(TS_LOG_WARN, "collectives: mmap(%s): %s", name, strerror(errno));
    if (creator) shm_unlink(name);
    ts_free(nd);
    return TS_ERR_SYSTEM;
  }
  nd->abort = (_Atomic int *)nd->base;
  nd->pids = ts_calloc((size_t)w->size, sizeof *nd->pids);
  if (!nd->pids) {
    munmap(nd->base, nd->bytes);
    ts_free(nd);
    return TS_ERR_NOMEM;
  }
  (void)wrank;
  w->node = nd;
  return TS_OK;
}

void coll_node_destroy(coll_world_t *w, bool unlink_it) {
  coll_node_t *nd = w->node;
  if (!nd) return;
  if (unlink_it) shm_unlink(nd->name);
  munmap(nd->base, nd->bytes);
  ts_free(nd->pids);
  ts_free(nd);
  w->node = NULL;
}

/* The kernel may copy less than asked (a partial transfer): loop. */
ts_status_t coll_cma_read(pid_t pid, const void *remote, void *local, size_t n) {
  while (n) {
    struct iovec l = {local, n}, r = {(void *)(uintptr_t)remote, n};
    ssize_t got = process_vm_readv(pid, &l, 1, &r, 1, 0);
    if (got <= 0) {
      if (got < 0 && errno == EINTR) continue;
      ts_log(TS_LOG_ERROR, "collectives: process_vm_readv from pid %d: %s", (int)pid,
             got < 0 ? strerror(errno) : "no progress");
      return TS_ERR_REMOTE;
    }
    local = (char *)local + got;
    remote = (const char *)remote + got;
    n -= (size_t)got;
  }
  return TS_OK;
}

ts_status_t coll_cma_write(pid_t pid, void *remote, const void *local, size_t n) {
  while (n) {
    struct iovec l = {(void *)(uintptr_t)local, n}, r = {remote, n};
    ssize_t put = process_vm_writev(pid, &l, 1, &r, 1, 0);
    if (put <= 0) {
      if (put < 0 && errno == EINTR) continue;
      ts_log(TS_LOG_ERROR, "collectives: process_vm_writev to pid %d: %s", (int)pid,
             put < 0 ? strerror(errno) : "no progress");
      return TS_ERR_REMOTE;
    }
    local = (const char *)local + put;
    remote = (char *)remote + put;
    n -= (size_t)put;
  }
  return TS_OK;
}
