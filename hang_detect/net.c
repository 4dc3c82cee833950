/* TCP plumbing for the heartbeat protocol: address parsing, a listening
 * socket, connects that retry until a deadline, whole-message sends and a
 * frame-reassembling receive buffer. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "hang_internal.h"

double ts_hang_mono(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

double ts_hang_wall(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

void ts_hang_strlcpy(char *dst, const char *s, size_t n) {
  if (n == 0) return;
  size_t l = s ? strlen(s) : 0;
  if (l >= n) l = n - 1;
  if (l) memcpy(dst, s, l);
  dst[l] = '\0';
}

bool ts_hang_addr_split(const char *addr, char *host, size_t hostlen, int *port) {
  if (!addr) return false;
  const char *colon = strrchr(addr, ':');
  if (!colon || colon == addr) return false;
  const char *h = addr;
  size_t hl = (size_t)(colon - addr);
  if (h[0] == '[') { /* [v6]:port */
    if (hl < 3 || h[hl - 1] != ']') return false;
    h++;
    hl -= 2;
  }
  if (hl >= hostlen) return false;
  char *end;
  errno = 0;
  long p = strtol(colon + 1, &end, 10);
  if (errno || end == colon + 1 || *end || p < 0 || p > 65535) return false;
  memcpy(host, h, hl);
  host[hl] = '\0';
  *port = (int)p;
  return true;
}

static ts_status_t resolve(const char *addr, bool passive, struct addrinfo **res, ts_diag_t *diag) {
  char host[256], port[16];
  int p;
  if (!ts_hang_addr_split(addr, host, sizeof host, &p)) {
    ts_diag_plain(diag, "bad address '%s' (want HOST:PORT)", addr ? addr : "");
    return TS_ERR_INVALID_ARGUMENT;
  }
  snprintf(port, sizeof port, "%d", p);
  struct addrinfo hints = {0};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = passive ? AI_PASSIVE : 0;
  int rc = getaddrinfo(host, port, &hints, res);
  if (rc) {
    ts_diag_plain(diag, "cannot resolve '%s': %s", addr, gai_strerror(rc));
    return TS_ERR_INVALID_ARGUMENT;
  }
  return TS_OK;
}

static void set_timeouts(int fd, double s) {
  struct timeval tv = {(time_t)s, (suseconds_t)((s - (time_t)s) * 1e6)};
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

static bool is_loopback(const struct sockaddr *sa) {
  if (sa->sa_family == AF_INET) return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127;
  if (sa->sa_family == AF_INET6) return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)sa)->sin6_addr);
  return false;
}

/* A host name that resolves only to loopback (Debian maps its own name to
 * 127.0.1.1) cannot be reached from other hosts: listen on the wildcard then.
 * Loopback asked for by name ("localhost", "127.0.0.1") stays loopback. */
static bool name_hides_loopback(const char *addr, const struct addrinfo *res) {
  char host[256];
  int port;
  if (!ts_hang_addr_split(addr, host, sizeof host, &port)) return false;
  if (!strcmp(host, "localhost") || !strncmp(host, "127.", 4) || !strcmp(host, "::1")) return false;
  for (const struct addrinfo *a = res; a; a = a->ai_next)
    if (!is_loopback(a->ai_addr)) return false;
  return res != NULL;
}

ts_status_t ts_hang_listen(const char *addr, char *bound, size_t boundlen, int *out, ts_diag_t *diag) {
  struct addrinfo *res;
  TS_CHECK(resolve(addr, true, &res, diag));
  if (name_hides_loopback(addr, res)) {
    char host[256], wild[32];
    int port = 0;
    ts_hang_addr_split(addr, host, sizeof host, &port);
    freeaddrinfo(res);
    snprintf(wild, sizeof wild, "0.0.0.0:%d", port);
    TS_CHECK(resolve(wild, true, &res, diag));
  }
  int fd = -1, err = 0;
  for (struct addrinfo *a = res; a; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      err = errno;
      continue;
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, a->ai_addr, a->ai_addrlen) == 0 && listen(fd, 256) == 0) break;
    err = errno;
    close(fd);
    fd = -1;
  }
  freeaddrinfo(res);
  if (fd < 0) {
    ts_diag_plain(diag, "cannot listen on '%s': %s", addr, strerror(err));
    return TS_ERR_SYSTEM;
  }
  struct sockaddr_storage ss;
  socklen_t sl = sizeof ss;
  char host[INET6_ADDRSTRLEN] = "?";
  int port = 0;
  if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0) {
    if (ss.ss_family == AF_INET) {
      struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
      inet_ntop(AF_INET, &s4->sin_addr, host, sizeof host);
      port = ntohs(s4->sin_port);
    } else if (ss.ss_family == AF_INET6) {
      struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
      inet_ntop(AF_INET6, &s6->sin6_addr, host, sizeof host);
      port = ntohs(s6->sin6_port);
    }
  }
  if (strchr(host, ':'))
    snprintf(bound, boundlen, "[%s]:%d", host, port);
  else
    snprintf(bound, boundlen, "%s:%d", host, port);
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  *out = fd;
  return TS_OK;
}

/* One connect attempt with a deadline (non-blocking connect + poll). */
static int connect_once(const struct addrinfo *a, double deadline, int *err) {
  int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
  if (fd < 0) {
    *err = errno;
    return -1;
  }
  if (connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
    if (errno != EINPROGRESS) {
      *err = errno;
      close(fd);
      return -1;
    }
    double left = deadline - ts_hang_mono();
    struct pollfd p = {fd, POLLOUT, 0};
    int rc = poll(&p, 1, left > 0 ? (int)(left * 1000) + 1 : 0);
    int soerr = 0;
    socklen_t sl = sizeof soerr;
    if (rc <= 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) != 0 || soerr) {
      *err = rc == 0 ? ETIMEDOUT : soerr ? soerr : errno;
      close(fd);
      return -1;
    }
  }
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  set_timeouts(fd, 2.0);
  return fd;
}

ts_status_t ts_hang_connect(const char *addr, double deadline, int *out, ts_diag_t *diag) {
  struct addrinfo *res;
  TS_CHECK(resolve(addr, false, &res, diag));
  int err = ETIMEDOUT;
  for (;;) {
    for (struct addrinfo *a = res; a; a = a->ai_next) {
      int fd = connect_once(a, deadline, &err);
      if (fd >= 0) {
        freeaddrinfo(res);
        *out = fd;
        return TS_OK;
      }
    }
    /* Refused: the coordinator may not listen yet. Retry until the deadline. */
    if (ts_hang_mono() + 0.05 >= deadline) break;
    struct timespec ts = {0, 50 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  freeaddrinfo(res);
  ts_diag_plain(diag, "cannot connect to the hang coordinator at '%s': %s", addr, strerror(err));
  return TS_ERR_TIMEOUT;
}

bool ts_hang_send_all(int fd, const uint8_t *buf, size_t len) {
  while (len) {
    ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        /* A non-blocking socket whose buffer is full: wait a little (the
         * messages are small; a peer that stops reading is dropped). */
        struct pollfd p = {fd, POLLOUT, 0};
        int rc = poll(&p, 1, 1000);
        if (rc < 0 && errno == EINTR) continue;
        if (rc == 0) errno = ETIMEDOUT;
        if (rc <= 0) return false;
        continue;
      }
      return false;
    }
    buf += n;
    len -= (size_t)n;
  }
  return true;
}

bool ts_hang_send_msg(int fd, const ts_hang_msg_t *m) {
  uint8_t buf[TS_HANG_MSG_HEADER + TS_HANG_MSG_MAX];
  size_t n = ts_hang_msg_encode(m, buf, sizeof buf);
  if (!n) {
    errno = EMSGSIZE; /* cannot happen for a message this process built */
    return false;
  }
  return ts_hang_send_all(fd, buf, n);
}

int ts_hang_rbuf_fill(ts_hang_rbuf_t *b, int fd) {
  /* Never hold more than one maximal frame plus a read's worth: a peer that
   * streams garbage is cut off by the decoder, not by memory. */
  size_t want = TS_HANG_MSG_HEADER + TS_HANG_MSG_MAX + 4096;
  if (b->cap < want) {
    uint8_t *p = ts_realloc(b->data, want);
    if (!p) return -1;
    b->data = p;
    b->cap = want;
  }
  if (b->len == b->cap) return -1; /* cannot happen: a full buffer holds a whole frame */
  for (;;) {
    ssize_t n = recv(fd, b->data + b->len, b->cap - b->len, MSG_DONTWAIT);
    if (n > 0) {
      b->len += (size_t)n;
      return 1;
    }
    if (n == 0) return 0;
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return 1;
    return -1;
  }
}

ts_status_t ts_hang_rbuf_next(ts_hang_rbuf_t *b, ts_hang_msg_t *m) {
  size_t used = 0;
  ts_status_t st = ts_hang_msg_decode(b->data, b->len, m, &used);
  if (st == TS_OK) {
    memmove(b->data, b->data + used, b->len - used);
    b->len -= used;
  }
  return st;
}

void ts_hang_rbuf_free(ts_hang_rbuf_t *b) {
  ts_free(b->data);
  b->data = NULL;
  b->len = b->cap = 0;
}
