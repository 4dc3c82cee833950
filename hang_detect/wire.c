/* The heartbeat wire protocol: frame encoding and a bounds-checked decoder
 * that rejects anything malformed (it reads bytes from the network: fuzzed
 * by tests/fuzz/fuzz_hang_msg.c), plus the job secret. */
#define _GNU_SOURCE
#include <math.h>
#include <string.h>
#include <sys/random.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "hang_internal.h"
#include "ts_coll.h"

#define MAGIC 0x31485354u /* "TSH1" little endian */

/* ---- names ------------------------------------------------------------- */

const char *ts_hang_activity_name(int a) {
  static const char *const names[] = {"idle", "compute", "collective", "input", "finished", "failed"};
  return a >= 0 && a < (int)(sizeof names / sizeof names[0]) ? names[a] : "?";
}

const char *ts_hang_worker_status_name(int s) {
  static const char *const names[] = {"never_connected", "ok", "finished", "dead", "no_response", "left", "cancelled"};
  return s >= 0 && s < (int)(sizeof names / sizeof names[0]) ? names[s] : "?";
}

/* ---- writer ------------------------------------------------------------- */

typedef struct {
  uint8_t *p;
  size_t len, cap;
  bool overflow;
} writer_t;

static void put(writer_t *w, const void *src, size_t n) {
  if (w->overflow || w->cap - w->len < n) {
    w->overflow = true;
    return;
  }
  memcpy(w->p + w->len, src, n);
  w->len += n;
}

static void put_u64(writer_t *w, uint64_t v) {
  uint8_t b[8];
  for (int i = 0; i < 8; i++) b[i] = (uint8_t)(v >> (8 * i));
  put(w, b, 8);
}
static void put_u32(writer_t *w, uint32_t v) {
  uint8_t b[4];
  for (int i = 0; i < 4; i++) b[i] = (uint8_t)(v >> (8 * i));
  put(w, b, 4);
}
static void put_u8(writer_t *w, uint8_t v) { put(w, &v, 1); }
static void put_i32(writer_t *w, int32_t v) { put_u32(w, (uint32_t)v); }
static void put_f64(writer_t *w, double v) {
  uint64_t u;
  memcpy(&u, &v, 8);
  put_u64(w, u);
}
static void put_str(writer_t *w, const char *s) {
  size_t n = strlen(s);
  if (n > 0xffff) n = 0xffff;
  uint8_t b[2] = {(uint8_t)n, (uint8_t)(n >> 8)};
  put(w, b, 2);
  put(w, s, n);
}

static void put_identity(writer_t *w, const ts_hang_state_t *s) {
  put_i32(w, s->rank);
  put_i32(w, s->size);
  put_i32(w, s->pid);
  put_str(w, s->host);
  put_str(w, s->module);
  put_u64(w, s->fingerprint);
  put_u64(w, s->launch_id);
}

static void put_coll(writer_t *w, const ts_hang_coll_t *c);

static void put_hot(writer_t *w, const ts_hang_state_t *s) {
  put_u64(w, s->progress);
  put_u64(w, (uint64_t)s->step);
  put_i32(w, s->activity);
  put_i32(w, s->instr);
  put_str(w, s->instr_name);
  put_i32(w, s->error);
  put_i32(w, s->waiting_on);
  put_f64(w, s->progress_age_s);
  put_u64(w, s->last_step_ns);
  put_u64(w, s->last_compute_ns);
  put_u64(w, s->last_collective_ns);
  int n = s->ncolls < 0 ? 0 : s->ncolls > TS_HANG_COLLS ? TS_HANG_COLLS : s->ncolls;
  put_u8(w, (uint8_t)n);
  for (int i = 0; i < n; i++) put_coll(w, &s->colls[i]);
}

static void put_flight(writer_t *w, const ts_hang_state_t *s) {
  int n = s->nflight < 0 ? 0 : s->nflight > TS_HANG_FLIGHT ? TS_HANG_FLIGHT : s->nflight;
  put_u8(w, (uint8_t)n);
  for (int i = 0; i < n; i++) put_coll(w, &s->flight[i]);
}

static void put_coll(writer_t *w, const ts_hang_coll_t *c) {
  {
    put_u32(w, c->comm);
    put_u64(w, c->seq);
    put_u8(w, (uint8_t)c->kind);
    put_u8(w, (uint8_t)c->state);
    put_i32(w, c->status);
    put_i32(w, c->peer);
    put_i32(w, c->waiting_on);
    put_u64(w, c->bytes);
    put_f64(w, c->age_posted_s);
    put_f64(w, c->age_started_s);
    put_f64(w, c->age_completed_s);
  }
}

size_t ts_hang_msg_encode(const ts_hang_msg_t *m, uint8_t *buf, size_t cap) {
  if (cap < TS_HANG_MSG_HEADER) return 0;
  writer_t w = {.p = buf,
                .len = TS_HANG_MSG_HEADER,
                .cap = cap < TS_HANG_MSG_HEADER + TS_HANG_MSG_MAX ? cap : TS_HANG_MSG_HEADER + TS_HANG_MSG_MAX};
  switch (m->type) {
  case TS_HANG_MSG_HELLO:
    put_str(&w, m->auth);
    put_identity(&w, &m->state);
    break;
  case TS_HANG_MSG_STATE:
    put_u32(&w, m->request);
    put_hot(&w, &m->state);
    break;
  case TS_HANG_MSG_STATE_REQUEST: put_u32(&w, m->request); break;
  case TS_HANG_MSG_FLIGHT:
    put_u32(&w, m->request);
    put_flight(&w, &m->state);
    break;
  case TS_HANG_MSG_REJECT:
  case TS_HANG_MSG_ABORT:
  case TS_HANG_MSG_NOTE:
  case TS_HANG_MSG_BYE_ACK:
  case TS_HANG_MSG_CANCEL: put_str(&w, m->text); break;
  case TS_HANG_MSG_WELCOME:
  case TS_HANG_MSG_CHALLENGE:
  case TS_HANG_MSG_AUTH: put_str(&w, m->auth); break;
  case TS_HANG_MSG_BYE: break;
  default: return 0;
  }
  if (w.overflow) return 0;
  uint32_t plen = (uint32_t)(w.len - TS_HANG_MSG_HEADER);
  writer_t h = {.p = buf, .len = 0, .cap = TS_HANG_MSG_HEADER};
  put_u32(&h, MAGIC);
  put_u8(&h, (uint8_t)m->type);
  put_u8(&h, 0);
  put_u8(&h, 0);
  put_u8(&h, 0);
  put_u32(&h, plen);
  return w.len;
}

/* ---- reader ------------------------------------------------------------- */

typedef struct {
  const uint8_t *p;
  size_t len, pos;
  bool bad;
} reader_t;

static bool get(reader_t *r, void *dst, size_t n) {
  if (r->bad || r->len - r->pos < n) {
    r->bad = true;
    memset(dst, 0, n);
    return false;
  }
  memcpy(dst, r->p + r->pos, n);
  r->pos += n;
  return true;
}
static uint64_t get_u64(reader_t *r) {
  uint8_t b[8];
  get(r, b, 8);
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = v << 8 | b[i];
  return v;
}
static uint32_t get_u32(reader_t *r) {
  uint8_t b[4];
  get(r, b, 4);
  return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}
static uint8_t get_u8(reader_t *r) {
  uint8_t b;
  get(r, &b, 1);
  return b;
}
static int32_t get_i32(reader_t *r) { return (int32_t)get_u32(r); }
static double get_f64(reader_t *r) {
  uint64_t u = get_u64(r);
  double d;
  memcpy(&d, &u, 8);
  return d;
}
/* A string into dst[cap]: rejected when longer than cap - 1 or holding
 * control bytes (names end up in logs and digests). */
static void get_str(reader_t *r, char *dst, size_t cap) {
  uint8_t b[2];
  dst[0] = '\0';
  if (!get(r, b, 2)) return;
  size_t n = (size_t)b[0] | (size_t)b[1] << 8;
  if (n >= cap || r->len - r->pos < n) {
    r->bad = true;
    return;
  }
  for (size_t i = 0; i < n; i++) {
    uint8_t ch = r->p[r->pos + i];
    if (ch < 0x20 && ch != '\n' && ch != '\t') {
      r->bad = true;
      return;
    }
  }
  memcpy(dst, r->p + r->pos, n);
  dst[n] = '\0';
  r->pos += n;
}

/* An age: finite, -1 (not reached) or >= 0. */
static bool age_ok(double a) { return isfinite(a) && (a >= 0 || a == -1.0) && a < 1e9; }

static void get_identity(reader_t *r, ts_hang_state_t *s) {
  s->rank = get_i32(r);
  s->size = get_i32(r);
  s->pid = get_i32(r);
  get_str(r, s->host, sizeof s->host);
  get_str(r, s->module, sizeof s->module);
  s->fingerprint = get_u64(r);
  s->launch_id = get_u64(r);
  if (s->size < 1 || s->rank < 0 || s->rank >= s->size || s->pid < 0) r->bad = true;
}

static void get_coll(reader_t *r, ts_hang_coll_t *c);

static void get_hot(reader_t *r, ts_hang_state_t *s) {
  s->progress = get_u64(r);
  s->step = (int64_t)get_u64(r);
  s->activity = get_i32(r);
  s->instr = get_i32(r);
  get_str(r, s->instr_name, sizeof s->instr_name);
  s->error = get_i32(r);
  s->waiting_on = get_i32(r);
  s->progress_age_s = get_f64(r);
  s->last_step_ns = get_u64(r);
  s->last_compute_ns = get_u64(r);
  s->last_collective_ns = get_u64(r);
  s->ncolls = get_u8(r);
  if (s->step < 0 || s->activity < TS_HANG_IDLE || s->activity > TS_HANG_FAILED || s->instr < -1 ||
      s->waiting_on < -1 || s->error > 0 || !age_ok(s->progress_age_s) || s->progress_age_s < 0 ||
      s->ncolls > TS_HANG_COLLS) {
    r->bad = true;
    return;
  }
  for (int i = 0; i < s->ncolls && !r->bad; i++) get_coll(r, &s->colls[i]);
}

static void get_flight(reader_t *r, ts_hang_state_t *s) {
  s->nflight = get_u8(r);
  if (s->nflight > TS_HANG_FLIGHT) {
    r->bad = true;
    return;
  }
  for (int i = 0; i < s->nflight && !r->bad; i++) get_coll(r, &s->flight[i]);
}

static void get_coll(reader_t *r, ts_hang_coll_t *c) {
  {
    c->comm = get_u32(r);
    c->seq = get_u64(r);
    c->kind = get_u8(r);
    c->state = get_u8(r);
    c->status = get_i32(r);
    c->peer = get_i32(r);
    c->waiting_on = get_i32(r);
    c->bytes = get_u64(r);
    c->age_posted_s = get_f64(r);
    c->age_started_s = get_f64(r);
    c->age_completed_s = get_f64(r);
    if (c->kind >= TS_COLL_KIND_COUNT || c->state > TS_COLL_FAILED || c->peer < -1 || c->waiting_on < -1 ||
        c->status > 0 || !age_ok(c->age_posted_s) || !age_ok(c->age_started_s) || !age_ok(c->age_completed_s)) {
      r->bad = true;
      return;
    }
  }
}

ts_status_t ts_hang_msg_decode(const uint8_t *buf, size_t len, ts_hang_msg_t *out, size_t *consumed) {
  *consumed = 0;
  /* Check the magic on what we have so far, so garbage is rejected before
   * a whole header arrived. */
  static const uint8_t magic[4] = {'T', 'S', 'H', '1'};
  for (size_t i = 0; i < len && i < 4; i++)
    if (buf[i] != magic[i]) return TS_ERR_PARSE;
  if (len < TS_HANG_MSG_HEADER) return TS_INPROGRESS;
  reader_t h = {.p = buf, .len = TS_HANG_MSG_HEADER, .pos = 4};
  int type = get_u8(&h);
  uint8_t flags = get_u8(&h), r0 = get_u8(&h), r1 = get_u8(&h);
  uint32_t plen = get_u32(&h);
  if (type < TS_HANG_MSG_HELLO || type >= TS_HANG_MSG_TYPE_END || flags || r0 || r1 || plen > TS_HANG_MSG_MAX)
    return TS_ERR_PARSE;
  if (len - TS_HANG_MSG_HEADER < plen) return TS_INPROGRESS;

  memset(out, 0, sizeof *out);
  out->type = type;
  out->state.instr = -1;
  out->state.waiting_on = -1;
  reader_t r = {.p = buf + TS_HANG_MSG_HEADER, .len = plen, .pos = 0};
  switch (type) {
  case TS_HANG_MSG_HELLO:
    get_str(&r, out->auth, sizeof out->auth);
    get_identity(&r, &out->state);
    break;
  case TS_HANG_MSG_STATE:
    out->request = get_u32(&r);
    get_hot(&r, &out->state);
    break;
  case TS_HANG_MSG_STATE_REQUEST: out->request = get_u32(&r); break;
  case TS_HANG_MSG_FLIGHT:
    out->request = get_u32(&r);
    get_flight(&r, &out->state);
    break;
  case TS_HANG_MSG_REJECT:
  case TS_HANG_MSG_ABORT:
  case TS_HANG_MSG_NOTE:
  case TS_HANG_MSG_BYE_ACK:
  case TS_HANG_MSG_CANCEL: get_str(&r, out->text, sizeof out->text); break;
  case TS_HANG_MSG_WELCOME:
  case TS_HANG_MSG_CHALLENGE:
  case TS_HANG_MSG_AUTH: get_str(&r, out->auth, sizeof out->auth); break;
  default: break; /* BYE: empty */
  }
  if (r.bad || r.pos != plen) return TS_ERR_PARSE; /* truncated fields or trailing bytes */
  *consumed = TS_HANG_MSG_HEADER + plen;
  return TS_OK;
}

/* ---- the job secret -------------------------------------------------------- */

ts_status_t ts_hang_secret_generate(char out[33]) {
  uint8_t raw[16];
  size_t got = 0;
  while (got < sizeof raw) {
    ssize_t n = getrandom(raw + got, sizeof raw - got, 0);
    if (n <= 0) return TS_ERR_SYSTEM;
    got += (size_t)n;
  }
  static const char hex[] = "0123456789abcdef";
  for (int i = 0; i < 16; i++) {
    out[2 * i] = hex[raw[i] >> 4];
    out[2 * i + 1] = hex[raw[i] & 15];
  }
  out[32] = '\0';
  return TS_OK;
}

/* ---- authentication (OpenSSL's libcrypto) ---------------------------------- */

void ts_hang_hmac_sha256_hex(const char *key, const void *data, size_t len, char out[65]) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  if (!HMAC(EVP_sha256(), key, (int)strlen(key), data, len, mac, &n) || n != 32) {
    memset(out, '0', 64); /* never equal to a real proof of a random nonce in practice; logged nowhere */
    out[64] = '\0';
    return;
  }
  static const char hex[] = "0123456789abcdef";
  for (unsigned i = 0; i < 32; i++) {
    out[2 * i] = hex[mac[i] >> 4];
    out[2 * i + 1] = hex[mac[i] & 15];
  }
  out[64] = '\0';
}

void ts_hang_auth_mac(const char *secret, const char *role, const char *n1, const char *n2, int rank, char out[65]) {
  char data[256];
  int len = snprintf(data, sizeof data, "tessera-hang-1 %s %.64s %.64s %d", role, n1, n2, rank);
  ts_hang_hmac_sha256_hex(secret, data, (size_t)(len > 0 ? len : 0), out);
}

bool ts_hang_auth_equal(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  if (la != lb) return false;
  return CRYPTO_memcmp(a, b, la) == 0;
}
