/* The node segment shared by the processes of one world on one host (POSIX
 * shared memory: a header with the world-wide abort word, then one row per
 * (direct slot, world rank): a flag slot and two eager areas), the regions of
 * ts_coll_alloc that peers map directly (memfd, opened by peers through
 * /proc/<pid>/fd), and CMA single copies (process_vm_readv/writev). */
#define _GNU_SOURCE
#include "coll_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

static size_t node_bytes(int nranks) {
  return 64 + (size_t)COLL_DIRECT_SLOTS * (size_t)nranks * (sizeof(dslot_t) + 2 * (size_t)COLL_EAGER_BYTES);
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
  pthread_mutex_init(&nd->lock, NULL);
  nd->next_id = 1;
  w->node = nd;
  return TS_OK;
}

/* Regions still allocated stay mapped (the caller broke the contract of
 * ts_coll_free; better a leak than freeing memory it may still use). */
void coll_node_destroy(coll_world_t *w, bool unlink_it) {
  coll_node_t *nd = w->node;
  if (!nd) return;
  if (unlink_it) shm_unlink(nd->name);
  for (int i = 0; i < COLL_PEERMAPS; i++)
    if (nd->maps[i].base) munmap(nd->maps[i].base, nd->maps[i].bytes);
  while (nd->regions) {
    coll_region_t *r = nd->regions;
    nd->regions = r->next;
    ts_free(r);
  }
  pthread_mutex_destroy(&nd->lock);
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

/* ---- ts_coll_alloc regions ----------------------------------------------------- */

static size_t page_round(size_t n) {
  size_t pg = (size_t)sysconf(_SC_PAGESIZE);
  return (n + pg - 1) / pg * pg;
}

ts_status_t ts_coll_alloc(ts_coll_comm_t *c, size_t bytes, void **out) {
  *out = NULL;
  if (!c) return TS_ERR_INVALID_ARGUMENT;
  size_t len = page_round(bytes ? bytes : 1);
  coll_node_t *nd = c->world->node;
  if (nd) {
    int fd = memfd_create("tessera-coll", MFD_CLOEXEC);
    if (fd >= 0 && ftruncate(fd, (off_t)len) == 0) {
      void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      coll_region_t *r = p != MAP_FAILED ? ts_calloc(1, sizeof *r) : NULL;
      if (r) {
        r->base = p;
        r->bytes = len;
        r->fd = fd;
        pthread_mutex_lock(&nd->lock);
        r->id = nd->next_id++;
        if (nd->next_id == 0) nd->next_id = 1;
        r->next = nd->regions;
        nd->regions = r;
        pthread_mutex_unlock(&nd->lock);
        *out = p;
        return TS_OK;
      }
      if (p != MAP_FAILED) munmap(p, len);
    }
    /* no memfd here: ordinary memory still works (through CMA) */
    ts_log(TS_LOG_INFO, "collectives: no shared mapping for ts_coll_alloc (%s); plain memory", strerror(errno));
    if (fd >= 0) close(fd);
  }
  void *p = NULL;
  if (posix_memalign(&p, (size_t)sysconf(_SC_PAGESIZE), len) != 0) return TS_ERR_NOMEM;
  *out = p;
  return TS_OK;
}

void ts_coll_free(ts_coll_comm_t *c, void *p) {
  if (!c || !p) return;
  coll_node_t *nd = c->world->node;
  if (nd) {
    pthread_mutex_lock(&nd->lock);
    coll_region_t **pp = &nd->regions;
    while (*pp && (*pp)->base != p) pp = &(*pp)->next;
    coll_region_t *r = *pp;
    if (r) *pp = r->next;
    pthread_mutex_unlock(&nd->lock);
    if (r) {
      munmap(r->base, r->bytes);
      close(r->fd);
      ts_free(r);
      return;
    }
  }
  free(p);
}

bool coll_region_find(coll_node_t *nd, const void *p, size_t n, uint64_t *key, uint64_t *off) {
  const char *q = p;
  bool found = false;
  pthread_mutex_lock(&nd->lock);
  for (coll_region_t *r = nd->regions; r; r = r->next)
    if (q >= r->base && n <= r->bytes && (size_t)(q - r->base) <= r->bytes - n) {
      *key = (uint64_t)(uint32_t)r->fd << 32 | r->id;
      *off = (uint64_t)(q - r->base);
      found = true;
      break;
    }
  pthread_mutex_unlock(&nd->lock);
  return found;
}

int coll_region_map(coll_node_t *nd, int wrank, uint64_t key, char **base, size_t *bytes) {
  pthread_mutex_lock(&nd->lock);
  nd->clock++;
  int victim = -1;
  for (int i = 0; i < COLL_PEERMAPS; i++) {
    coll_peermap_t *m = &nd->maps[i];
    if (m->base && m->wrank == wrank && m->key == key) {
      m->pins++;
      m->used = nd->clock;
      *base = m->base;
      *bytes = m->bytes;
      pthread_mutex_unlock(&nd->lock);
      return i;
    }
    if (m->pins == 0 && (victim < 0 || !m->base || (nd->maps[victim].base && m->used < nd->maps[victim].used)))
      victim = i;
  }
  if (victim < 0) {
    pthread_mutex_unlock(&nd->lock);
    return -1; /* every mapping in use by running collectives */
  }
  /* the peer's region stays allocated while it takes part in this
   * collective, so its fd is valid until then */
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/fd/%u", (int)nd->pids[wrank], (unsigned)(key >> 32));
  int fd = open(path, O_RDWR | O_CLOEXEC);
  struct stat sb;
  void *p = MAP_FAILED;
  if (fd >= 0 && fstat(fd, &sb) == 0 && sb.st_size > 0)
    p = mmap(NULL, (size_t)sb.st_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  if (fd >= 0) close(fd);
  if (p == MAP_FAILED) {
    pthread_mutex_unlock(&nd->lock);
    ts_log(TS_LOG_INFO, "collectives: cannot map %s (%s); CMA instead", path, strerror(errno));
    return -1;
  }
  coll_peermap_t *m = &nd->maps[victim];
  if (m->base) munmap(m->base, m->bytes);
  *m = (coll_peermap_t){.wrank = wrank, .pins = 1, .key = key, .base = p, .bytes = (size_t)sb.st_size,
                        .used = nd->clock};
  *base = m->base;
  *bytes = m->bytes;
  pthread_mutex_unlock(&nd->lock);
  return victim;
}

void coll_region_unpin(coll_node_t *nd, int pin) {
  if (pin < 0) return;
  pthread_mutex_lock(&nd->lock);
  nd->maps[pin].pins--;
  pthread_mutex_unlock(&nd->lock);
}
