/* Shared inside hang_detect/: sockets with deadlines, clocks, string
 * helpers. Not part of the public API. */
#ifndef TS_HANG_INTERNAL_H
#define TS_HANG_INTERNAL_H

#include "ts_hang.h"

#include <string.h>

/* CLOCK_MONOTONIC seconds (the same clock as ts_coll_now) and wall-clock
 * unix seconds. */
double ts_hang_mono(void);
double ts_hang_wall(void);

/* Copies s into dst[n] (truncating, always NUL-terminated). */
void ts_hang_strlcpy(char *dst, const char *s, size_t n);
/* Whether s can be a job secret: 1..TS_HANG_SECRET_MAX characters. */
static inline bool ts_hang_secret_ok(const char *s) { return s && *s && strlen(s) <= TS_HANG_SECRET_MAX; }

/* Splits "host:port" (host may be "[v6]"); false when malformed. */
bool ts_hang_addr_split(const char *addr, char *host, size_t hostlen, int *port);
/* A listening TCP socket on addr; the bound "host:port" goes to bound. */
ts_status_t ts_hang_listen(const char *addr, char *bound, size_t boundlen, int *fd, ts_diag_t *diag);
/* Connects to addr, retrying refused connections until `deadline`
 * (ts_hang_mono seconds). The socket is blocking with send/recv timeouts
 * of 2 s. */
ts_status_t ts_hang_connect(const char *addr, double deadline, int *fd, ts_diag_t *diag);
/* Sends all of buf (MSG_NOSIGNAL); false on error or timeout. */
bool ts_hang_send_all(int fd, const uint8_t *buf, size_t len);
/* Encodes and sends one message. */
bool ts_hang_send_msg(int fd, const ts_hang_msg_t *m);

/* A growable receive buffer for frames. */
typedef struct {
  uint8_t *data;
  size_t len, cap;
} ts_hang_rbuf_t;

/* Reads what is available (non-blocking fd, or after poll said readable):
 * 1 read something, 0 the peer closed, -1 error (EAGAIN counts as 1 with
 * nothing read). */
int ts_hang_rbuf_fill(ts_hang_rbuf_t *b, int fd);
/* Takes the next whole frame: TS_OK (decoded into m), TS_INPROGRESS, TS_ERR_PARSE. */
ts_status_t ts_hang_rbuf_next(ts_hang_rbuf_t *b, ts_hang_msg_t *m);
void ts_hang_rbuf_free(ts_hang_rbuf_t *b);

#endif
