/* The wire protocol: encode/decode round trips, the decoder's rejection of
 * malformed, oversized and partial frames, and a live coordinator (in a
 * thread) that rejects unauthenticated and malformed clients without
 * crashing and still accepts the real worker afterwards. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "hang_internal.h"
#include "hang_test.h"
#include "ts_coll.h"
#include "ts_test.h"

static ts_hang_msg_t sample_state(void) {
  ts_hang_msg_t m;
  memset(&m, 0, sizeof m);
  m.type = TS_HANG_MSG_STATE;
  m.request = 7;
  ts_hang_state_t *s = &m.state;
  s->progress = 123456789012ull;
  s->step = 42;
  s->activity = TS_HANG_COLLECTIVE;
  s->instr = 17;
  strcpy(s->instr_name, "all-reduce.17");
  s->error = 0;
  s->waiting_on = 3;
  s->progress_age_s = 1.25;
  s->last_step_ns = 1000;
  s->last_compute_ns = 600;
  s->last_collective_ns = 400;
  s->ncolls = 2;
  s->colls[0] = (ts_hang_coll_t){5, 99, TS_COLL_ALL_GATHER, TS_COLL_STARTED, 0, -1, 2, 4096, 1.5, 1.0, -1};
  s->colls[1] = (ts_hang_coll_t){5, 98, TS_COLL_ALL_REDUCE, TS_COLL_FAILED, TS_ERR_TIMEOUT, 1, -1, 8, 3, 2.5, 2};
  return m;
}

static void roundtrip(void) {
  uint8_t buf[TS_HANG_MSG_HEADER + TS_HANG_MSG_MAX];
  ts_hang_msg_t m = sample_state(), d;
  size_t n = ts_hang_msg_encode(&m, buf, sizeof buf), used = 0;
  EXPECT(n > TS_HANG_MSG_HEADER);
  EXPECT(ts_hang_msg_decode(buf, n, &d, &used) == TS_OK && used == n);
  EXPECT(d.type == TS_HANG_MSG_STATE && d.request == 7);
  EXPECT(d.state.progress == 123456789012ull && d.state.step == 42 && d.state.waiting_on == 3);
  EXPECT(!strcmp(d.state.instr_name, "all-reduce.17") && d.state.progress_age_s == 1.25);
  EXPECT(d.state.ncolls == 2 && d.state.colls[0].seq == 99 && d.state.colls[0].waiting_on == 2);
  EXPECT(d.state.colls[1].status == TS_ERR_TIMEOUT && d.state.colls[1].age_completed_s == 2);
  /* Every prefix is partial, never an error. */
  for (size_t k = 0; k < n; k++) EXPECT_EQ(ts_hang_msg_decode(buf, k, &d, &used), TS_INPROGRESS);

  /* HELLO */
  ts_hang_msg_t h;
  memset(&h, 0, sizeof h);
  h.type = TS_HANG_MSG_HELLO;
  strcpy(h.auth, "0123456789abcdef");
  h.state.rank = 2;
  h.state.size = 4;
  h.state.pid = 99;
  strcpy(h.state.host, "node-7");
  strcpy(h.state.module, "jit_step");
  h.state.fingerprint = 0xfedcba9876543210ull;
  h.state.launch_id = 5;
  n = ts_hang_msg_encode(&h, buf, sizeof buf);
  EXPECT_EQ(ts_hang_msg_decode(buf, n, &d, &used), TS_OK);
  EXPECT(!strcmp(d.auth, "0123456789abcdef") && d.state.rank == 2 && d.state.size == 4 && !strcmp(d.state.host, "node-7"));
  EXPECT(d.state.fingerprint == 0xfedcba9876543210ull && d.state.launch_id == 5);

  /* text messages */
  ts_hang_msg_t a = {.type = TS_HANG_MSG_ABORT};
  strcpy(a.text, "hang detector: Bad device");
  n = ts_hang_msg_encode(&a, buf, sizeof buf);
  EXPECT(ts_hang_msg_decode(buf, n, &d, &used) == TS_OK && d.type == TS_HANG_MSG_ABORT &&
         !strcmp(d.text, a.text));
  /* Too small a buffer: 0, nothing half-written counts. */
  EXPECT_EQ(ts_hang_msg_encode(&m, buf, 20), 0);
}

static void malformed(void) {
  uint8_t buf[TS_HANG_MSG_HEADER + TS_HANG_MSG_MAX + 16];
  ts_hang_msg_t m = sample_state(), d;
  size_t n = ts_hang_msg_encode(&m, buf, sizeof buf), used;
  uint8_t b[sizeof buf];

  memcpy(b, buf, n);
  b[0] = 'X'; /* bad magic: rejected from the first byte */
  EXPECT_EQ(ts_hang_msg_decode(b, 1, &d, &used), TS_ERR_PARSE);
  EXPECT_EQ(ts_hang_msg_decode((const uint8_t *)"GET / HTTP/1.1\r\n", 16, &d, &used), TS_ERR_PARSE);

  memcpy(b, buf, n);
  b[4] = 200; /* unknown type */
  EXPECT_EQ(ts_hang_msg_decode(b, n, &d, &used), TS_ERR_PARSE);

  memcpy(b, buf, n);
  b[5] = 1; /* flags must be zero */
  EXPECT_EQ(ts_hang_msg_decode(b, n, &d, &used), TS_ERR_PARSE);

  memcpy(b, buf, n);
  uint32_t big = TS_HANG_MSG_MAX + 1; /* oversized: rejected before the payload arrives */
  memcpy(b + 8, &big, 4);
  EXPECT_EQ(ts_hang_msg_decode(b, TS_HANG_MSG_HEADER, &d, &used), TS_ERR_PARSE);

  memcpy(b, buf, n);
  uint32_t shorter = (uint32_t)(n - TS_HANG_MSG_HEADER - 1); /* a field cut short */
  memcpy(b + 8, &shorter, 4);
  EXPECT_EQ(ts_hang_msg_decode(b, n, &d, &used), TS_ERR_PARSE);

  memcpy(b, buf, n);
  uint32_t longer = (uint32_t)(n - TS_HANG_MSG_HEADER + 1); /* trailing byte */
  memcpy(b + 8, &longer, 4);
  b[n] = 0;
  EXPECT_EQ(ts_hang_msg_decode(b, n + 1, &d, &used), TS_ERR_PARSE);

  /* Values out of range: activity, ncolls, a NaN age, a control byte. */
  ts_hang_msg_t bad = sample_state();
  bad.state.activity = 77;
  n = ts_hang_msg_encode(&bad, b, sizeof b);
  EXPECT_EQ(ts_hang_msg_decode(b, n, &d, &used), TS_ERR_PARSE);
  bad = sample_state();
  bad.state.progress_age_s = 0.0 / 0.0;
  n = ts_hang_msg_encode(&bad, b, sizeof b);
  EXPECT_EQ(ts_hang_msg_decode(b, n, &d, &used), TS_ERR_PARSE);
  bad = sample_state();
  bad.state.colls[1].kind = 200;
  n = ts_hang_msg_encode(&bad, b, sizeof b);
  EXPECT_EQ(ts_hang_msg_decode(b, n, &d, &used), TS_ERR_PARSE);
  bad = sample_state();
  strcpy(bad.state.instr_name, "x\033[2J");
  n = ts_hang_msg_encode(&bad, b, sizeof b);
  EXPECT_EQ(ts_hang_msg_decode(b, n, &d, &used), TS_ERR_PARSE);
  ts_hang_msg_t h = {.type = TS_HANG_MSG_HELLO};
  strcpy(h.auth, "s");
  h.state.rank = 4;
  h.state.size = 4; /* rank out of its world */
  n = ts_hang_msg_encode(&h, b, sizeof b);
  EXPECT_EQ(ts_hang_msg_decode(b, n, &d, &used), TS_ERR_PARSE);
  /* A string length beyond the field. */
  ts_hang_msg_t t = {.type = TS_HANG_MSG_NOTE};
  memset(t.text, 'a', sizeof t.text - 1);
  n = ts_hang_msg_encode(&t, b, sizeof b);
  EXPECT_EQ(ts_hang_msg_decode(b, n, &d, &used), TS_OK);
  uint16_t l = (uint16_t)sizeof t.text; /* one more than fits */
  memcpy(b + TS_HANG_MSG_HEADER, &l, 2);
  uint32_t pl = (uint32_t)(2 + l);
  memcpy(b + 8, &pl, 4);
  EXPECT_EQ(ts_hang_msg_decode(b, TS_HANG_MSG_HEADER + pl, &d, &used), TS_ERR_PARSE);
}

/* ---- a live coordinator --------------------------------------------------- */

static void *run_coord(void *arg) {
  ts_hang_coord_t *c = arg;
  return (void *)(intptr_t)ts_hang_coord_run(c);
}

/* Connects raw, sends bytes, returns what the coordinator answered (the
 * message type, 0 when it just closed). */
static int raw_client(const char *addr, const uint8_t *bytes, size_t n, char *text, size_t tn) {
  int fd;
  ts_diag_t diag = {0};
  if (ts_hang_connect(addr, ts_hang_mono() + 5, &fd, &diag) != TS_OK) return -1;
  ts_hang_send_all(fd, bytes, n);
  ts_hang_rbuf_t rb = {0};
  ts_hang_msg_t m;
  int type = 0;
  double deadline = ts_hang_mono() + 5;
  /* The last message before the coordinator closed (or a CHALLENGE left
   * unanswered when `bytes` is a HELLO alone). */
  while (ts_hang_mono() < deadline) {
    struct pollfd pf = {fd, POLLIN, 0};
    if (poll(&pf, 1, 100) <= 0) {
      if (type == TS_HANG_MSG_CHALLENGE) break;
      continue;
    }
    int rc = ts_hang_rbuf_fill(&rb, fd);
    while (ts_hang_rbuf_next(&rb, &m) == TS_OK) {
      type = m.type;
      if (text) ts_hang_strlcpy(text, m.type == TS_HANG_MSG_CHALLENGE ? m.auth : m.text, tn);
    }
    if (rc <= 0) break;
  }
  ts_hang_rbuf_free(&rb);
  close(fd);
  return type;
}

/* RFC 4231 test case 2 and the handshake's proofs. */
static void hmac_vectors(void) {
  char out[65];
  ts_hang_hmac_sha256_hex("Jefe", "what do ya want for nothing?", 28, out);
  EXPECT_STREQ(out, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  char a[65], b[65];
  ts_hang_auth_mac("k", "worker", "n1", "n2", 3, a);
  ts_hang_auth_mac("k", "worker", "n1", "n2", 4, b); /* the rank is bound into the proof */
  EXPECT(strcmp(a, b) != 0 && !ts_hang_auth_equal(a, b) && ts_hang_auth_equal(a, a));
  ts_hang_auth_mac("k", "coordinator", "n1", "n2", 3, b); /* a worker's proof is no coordinator's */
  EXPECT(strcmp(a, b) != 0);
}

static void live(void) {
  ts_hang_coord_opts_t o = quiet_coord_opts(1, "right-secret", 30);
  ts_hang_coord_t *c;
  ts_diag_t diag = {0};
  EXPECT_EQ(ts_hang_coord_create(&o, &c, &diag), TS_OK);
  const char *addr = ts_hang_coord_addr(c);
  EXPECT(strncmp(addr, "127.0.0.1:", 10) == 0 && strcmp(addr, "127.0.0.1:0") != 0);
  pthread_t th;
  pthread_create(&th, NULL, run_coord, c);

  uint8_t buf[TS_HANG_MSG_HEADER + TS_HANG_MSG_MAX];
  char why[TS_HANG_TEXT_MAX];
  /* HELLO is answered with a challenge (a fresh nonce each time)... */
  ts_hang_msg_t h = {.type = TS_HANG_MSG_HELLO};
  strcpy(h.auth, "00112233445566778899aabbccddeeff");
  h.state.rank = 0;
  h.state.size = 1;
  size_t n = ts_hang_msg_encode(&h, buf, sizeof buf);
  char nonce1[TS_HANG_TEXT_MAX] = "", nonce2[TS_HANG_TEXT_MAX] = "";
  EXPECT(raw_client(addr, buf, n, nonce1, sizeof nonce1) == TS_HANG_MSG_CHALLENGE && strlen(nonce1) == 32);
  EXPECT(raw_client(addr, buf, n, nonce2, sizeof nonce2) == TS_HANG_MSG_CHALLENGE && strcmp(nonce1, nonce2));
  /* ...and a proof made with another secret (or a replayed one: the nonce
   * differs) is refused. */
  ts_hang_msg_t a = {.type = TS_HANG_MSG_AUTH};
  ts_hang_auth_mac("wrong-secret", "worker", nonce2, h.auth, 0, a.auth);
  n = ts_hang_msg_encode(&h, buf, sizeof buf);
  n += ts_hang_msg_encode(&a, buf + n, sizeof buf - n);
  EXPECT(raw_client(addr, buf, n, why, sizeof why) == TS_HANG_MSG_REJECT && strstr(why, "authentication failed"));
  ts_hang_auth_mac("right-secret", "worker", nonce2, h.auth, 0, a.auth);
  n = ts_hang_msg_encode(&h, buf, sizeof buf);
  n += ts_hang_msg_encode(&a, buf + n, sizeof buf - n);
  EXPECT(raw_client(addr, buf, n, why, sizeof why) == TS_HANG_MSG_REJECT && strstr(why, "authentication failed"));
  /* The secret is on no frame a worker sends. */
  EXPECT(memmem(buf, n, "right-secret", 12) == NULL);
  /* a state before HELLO */
  ts_hang_msg_t s = sample_state();
  n = ts_hang_msg_encode(&s, buf, sizeof buf);
  EXPECT(raw_client(addr, buf, n, why, sizeof why) == TS_HANG_MSG_REJECT && strstr(why, "HELLO"));
  /* garbage */
  EXPECT(raw_client(addr, (const uint8_t *)"GET / HTTP/1.0\r\n\r\n", 18, why, sizeof why) == TS_HANG_MSG_REJECT &&
         strstr(why, "malformed"));
  /* a rank outside the world */
  h.state.rank = 1;
  h.state.size = 2;
  n = ts_hang_msg_encode(&h, buf, sizeof buf);
  EXPECT(raw_client(addr, buf, n, why, sizeof why) == TS_HANG_MSG_REJECT && strstr(why, "world"));

  /* The real worker is still accepted, and its goodbye ends the coordinator. */
  ts_hang_progress_t p;
  memset(&p, 0, sizeof p);
  ts_hang_identity_fill(&p, "m", 1, 1, 0, 1);
  ts_hang_worker_opts_t wo;
  ts_hang_worker_opts_default(&wo);
  wo.addr = addr;
  wo.secret = "right-secret";
  wo.progress = &p;
  wo.period_s = 0.05;
  ts_hang_worker_t *w = NULL;
  EXPECT_EQ(ts_hang_worker_start(&wo, &w, &diag), TS_OK);
  EXPECT(ts_hang_worker_connected(w));
  /* A second worker claiming the same rank is refused. */
  ts_hang_worker_t *w2 = NULL;
  ts_diag_t d2 = {0};
  EXPECT(ts_hang_worker_start(&wo, &w2, &d2) == TS_ERR_REMOTE && w2 == NULL);
  EXPECT(d2.text && strstr(d2.text, "connected already"));
  ts_diag_free(&d2);
  /* The wrong secret through the worker API. */
  wo.secret = "nope";
  EXPECT_EQ(ts_hang_worker_start(&wo, &w2, &d2), TS_ERR_REMOTE);
  EXPECT(d2.text && strstr(d2.text, "rejected"));
  ts_diag_free(&d2);
  atomic_store(&p.activity, TS_HANG_FINISHED);
  EXPECT_EQ(ts_hang_worker_stop(w, 3), TS_OK);
  ts_hang_worker_destroy(w);
  void *rc;
  pthread_join(th, &rc);
  EXPECT_EQ((intptr_t)rc, 0);
  EXPECT(ts_hang_coord_digest(c) == NULL);
  ts_hang_coord_destroy(c);
  ts_diag_free(&diag);

  /* Nothing listens: the worker gives up at its deadline. */
  wo.secret = "x";
  wo.addr = "127.0.0.1:1";
  wo.connect_timeout_s = 0.3;
  double t0 = ts_hang_mono();
  EXPECT_EQ(ts_hang_worker_start(&wo, &w2, &d2), TS_ERR_TIMEOUT);
  EXPECT(ts_hang_mono() - t0 < 2);
  ts_diag_free(&d2);
}

/* A send that finds the peer's buffer full waits (up to 1 s a try); a
 * signal landing in that wait (SIGTERM to a rank, a profiler's timer) must
 * not count as a lost coordinator. The peer drains after 0.4 s, a timer
 * signal interrupts the wait at 0.1 s. */
static void on_alarm(int sig) { (void)sig; }

static void *drain_later(void *arg) {
  int fd = *(int *)arg;
  usleep(400 * 1000);
  char buf[4096];
  for (;;) {
    struct pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, 500) <= 0) break;
    if (read(fd, buf, sizeof buf) <= 0) break;
  }
  return NULL;
}

static void send_all_survives_signal(void) {
  int sv[2];
  EXPECT(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
  int small = 4096;
  setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
  setsockopt(sv[1], SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
  fcntl(sv[0], F_SETFL, fcntl(sv[0], F_GETFL) | O_NONBLOCK);
  static uint8_t chunk[1024];
  while (send(sv[0], chunk, sizeof chunk, MSG_NOSIGNAL) > 0) {
  }
  EXPECT(errno == EAGAIN || errno == EWOULDBLOCK);
  struct sigaction sa, old;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_alarm; /* no SA_RESTART: poll fails with EINTR */
  sigaction(SIGALRM, &sa, &old);
  pthread_t t;
  pthread_create(&t, NULL, drain_later, &sv[1]);
  struct itimerval it = {{0, 0}, {0, 100 * 1000}};
  setitimer(ITIMER_REAL, &it, NULL);
  static uint8_t msg[8192];
  EXPECT(ts_hang_send_all(sv[0], msg, sizeof msg));
  close(sv[0]);
  pthread_join(t, NULL);
  close(sv[1]);
  sigaction(SIGALRM, &old, NULL);
}

int main(void) {
  roundtrip();
  send_all_survives_signal();
  malformed();
  hmac_vectors();
  live();
  char s1[33], s2[33];
  EXPECT(ts_hang_secret_generate(s1) == TS_OK && ts_hang_secret_generate(s2) == TS_OK);
  EXPECT(strlen(s1) == 32 && strcmp(s1, s2) != 0);
  char host[64];
  int port;
  EXPECT(ts_hang_addr_split("127.0.0.1:4000", host, sizeof host, &port) && port == 4000 && !strcmp(host, "127.0.0.1"));
  EXPECT(ts_hang_addr_split("[::1]:0", host, sizeof host, &port) && port == 0 && !strcmp(host, "::1"));
  EXPECT(!ts_hang_addr_split("nohost", host, sizeof host, &port));
  EXPECT(!ts_hang_addr_split("h:99999", host, sizeof host, &port));
  printf("%s\n", failures ? "FAILED" : "ok");
  return failures ? 1 : 0;
}
