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

/* ---- one field list, both ways ------------------------------------------ */

/* Each part of a frame is walked by one function that serves both ways:
 * encoding copies every field into the buffer, decoding copies it out and
 * checks it (the bytes come from the network). Once the buffer is too
 * small, a field truncated or a value out of range, nothing more moves. */
typedef struct {
  uint8_t *out;      /* encoding into out[0..len), or */
  const uint8_t *in; /* decoding from in[0..len) */
  size_t len, pos;
  bool bad; /* encoding: would overflow; decoding: truncated or invalid */
} codec_t;

static bool decoding(const codec_t *c) { return c->in != NULL; }

static void io_bytes(codec_t *c, void *v, size_t n) {
  if (c->bad || c->len - c->pos < n) {
    c->bad = true;
    if (decoding(c)) memset(v, 0, n);
    return;
  }
  if (decoding(c))
    memcpy(v, c->in + c->pos, n);
  else
    memcpy(c->out + c->pos, v, n);
  c->pos += n;
}

/* n bytes little endian: writes v, or returns what was read (0 when bad). */
static uint64_t io_le(codec_t *c, uint64_t v, int n) {
  uint8_t b[8];
  for (int i = 0; i < n; i++) b[i] = (uint8_t)(v >> (8 * i));
  io_bytes(c, b, (size_t)n);
  v = 0;
  for (int i = n - 1; i >= 0; i--) v = v << 8 | b[i];
  return v;
}
static void io_u64(codec_t *c, uint64_t *v) { *v = io_le(c, *v, 8); }
static void io_u32(codec_t *c, uint32_t *v) { *v = (uint32_t)io_le(c, *v, 4); }
static void io_i64(codec_t *c, int64_t *v) { *v = (int64_t)io_le(c, (uint64_t)*v, 8); }
static void io_i32(codec_t *c, int32_t *v) { *v = (int32_t)(uint32_t)io_le(c, (uint32_t)*v, 4); }
static void io_u8(codec_t *c, int32_t *v) { *v = (int32_t)io_le(c, (uint8_t)*v, 1); }
static void io_f64(codec_t *c, double *v) {
  uint64_t u;
  memcpy(&u, v, 8);
  io_u64(c, &u);
  memcpy(v, &u, 8);
}

/* A string (u16 length, then the bytes) in s[cap]: encoding cuts it at
 * 0xffff bytes; decoding rejects one longer than cap - 1 or holding control
 * bytes (names end up in logs and digests). */
static void io_str(codec_t *c, char *s, size_t cap) {
  if (!decoding(c)) {
    size_t n = strlen(s);
    if (n > 0xffff) n = 0xffff;
    io_le(c, n, 2);
    io_bytes(c, s, n);
    return;
  }
  s[0] = '\0';
  size_t n = (size_t)io_le(c, 0, 2);
  if (c->bad) return;
  if (n >= cap || c->len - c->pos < n) {
    c->bad = true;
    return;
  }
  for (size_t i = 0; i < n; i++) {
    uint8_t ch = c->in[c->pos + i];
    if (ch < 0x20 && ch != '\n' && ch != '\t') {
      c->bad = true;
      return;
    }
  }
  memcpy(s, c->in + c->pos, n);
  s[n] = '\0';
  c->pos += n;
}

/* A count of records (u8): encoding clamps it to [0, max], decoding
 * rejects more than max. */
static void io_count(codec_t *c, int32_t *n, int max) {
  if (!decoding(c)) *n = *n < 0 ? 0 : *n > max ? max : *n;
  io_u8(c, n);
  if (*n > max) c->bad = true;
}

/* An age: finite, -1 (not reached) or >= 0. */
static bool age_ok(double a) { return isfinite(a) && (a >= 0 || a == -1.0) && a < 1e9; }

static void io_identity(codec_t *c, ts_hang_state_t *s) {
  io_i32(c, &s->rank);
  io_i32(c, &s->size);
  io_i32(c, &s->pid);
  io_str(c, s->host, sizeof s->host);
  io_str(c, s->module, sizeof s->module);
  io_u64(c, &s->fingerprint);
  io_u64(c, &s->launch_id);
  if (decoding(c) && (s->size < 1 || s->rank < 0 || s->rank >= s->size || s->pid < 0)) c->bad = true;
}

static void io_coll(codec_t *c, ts_hang_coll_t *r) {
  io_u32(c, &r->comm);
  io_u64(c, &r->seq);
  io_u8(c, &r->kind);
  io_u8(c, &r->state);
  io_i32(c, &r->status);
  io_i32(c, &r->peer);
  io_i32(c, &r->waiting_on);
  io_u64(c, &r->bytes);
  io_f64(c, &r->age_posted_s);
  io_f64(c, &r->age_started_s);
  io_f64(c, &r->age_completed_s);
  if (decoding(c) && (r->kind >= TS_COLL_KIND_COUNT || r->state > TS_COLL_FAILED || r->peer < -1 || r->waiting_on < -1 ||
                      r->status > 0 || !age_ok(r->age_posted_s) || !age_ok(r->age_started_s) ||
                      !age_ok(r->age_completed_s)))
    c->bad = true;
}

static void io_hot(codec_t *c, ts_hang_state_t *s) {
  io_u64(c, &s->progress);
  io_i64(c, &s->step);
  io_i32(c, &s->activity);
  io_i32(c, &s->instr);
  io_str(c, s->instr_name, sizeof s->instr_name);
  io_i32(c, &s->error);
  io_i32(c, &s->waiting_on);
  io_f64(c, &s->progress_age_s);
  io_u64(c, &s->last_step_ns);
  io_u64(c, &s->last_compute_ns);
  io_u64(c, &s->last_collective_ns);
  io_count(c, &s->ncolls, TS_HANG_COLLS);
  if (decoding(c) && (s->step < 0 || s->activity < TS_HANG_IDLE || s->activity > TS_HANG_FAILED || s->instr < -1 ||
                      s->waiting_on < -1 || s->error > 0 || !age_ok(s->progress_age_s) || s->progress_age_s < 0))
    c->bad = true;
  for (int i = 0; i < s->ncolls && !c->bad; i++) io_coll(c, &s->colls[i]);
}

static void io_flight(codec_t *c, ts_hang_state_t *s) {
  io_count(c, &s->nflight, TS_HANG_FLIGHT);
  for (int i = 0; i < s->nflight && !c->bad; i++) io_coll(c, &s->flight[i]);
}

/* The payload of m->type; false for a type that has none defined. */
static bool io_payload(codec_t *c, ts_hang_msg_t *m) {
  switch (m->type) {
  case TS_HANG_MSG_HELLO:
    io_str(c, m->auth, sizeof m->auth);
    io_identity(c, &m->state);
    return true;
  case TS_HANG_MSG_STATE:
    io_u32(c, &m->request);
    io_hot(c, &m->state);
    return true;
  case TS_HANG_MSG_STATE_REQUEST: io_u32(c, &m->request); return true;
  case TS_HANG_MSG_FLIGHT:
    io_u32(c, &m->request);
    io_flight(c, &m->state);
    return true;
  case TS_HANG_MSG_REJECT:
  case TS_HANG_MSG_ABORT:
  case TS_HANG_MSG_NOTE:
  case TS_HANG_MSG_BYE_ACK:
  case TS_HANG_MSG_CANCEL: io_str(c, m->text, sizeof m->text); return true;
  case TS_HANG_MSG_WELCOME:
  case TS_HANG_MSG_CHALLENGE:
  case TS_HANG_MSG_AUTH: io_str(c, m->auth, sizeof m->auth); return true;
  case TS_HANG_MSG_BYE: return true; /* empty */
  default: return false;
  }
}

/* The header: magic, type u8, flags u8, reserved u16, payload length u32. */
static void io_header(codec_t *c, uint32_t *magic, int32_t *type, int32_t *flags, uint32_t *reserved, uint32_t *plen) {
  io_u32(c, magic);
  io_u8(c, type);
  io_u8(c, flags);
  *reserved = (uint32_t)io_le(c, *reserved, 2);
  io_u32(c, plen);
}

size_t ts_hang_msg_encode(const ts_hang_msg_t *m, uint8_t *buf, size_t cap) {
  if (cap < TS_HANG_MSG_HEADER) return 0;
  ts_hang_msg_t copy = *m; /* the codec writes every field back (and clamps the counts) */
  codec_t c = {.out = buf,
               .pos = TS_HANG_MSG_HEADER,
               .len = cap < TS_HANG_MSG_HEADER + TS_HANG_MSG_MAX ? cap : TS_HANG_MSG_HEADER + TS_HANG_MSG_MAX};
  if (!io_payload(&c, &copy) || c.bad) return 0;
  uint32_t magic = MAGIC, reserved = 0, plen = (uint32_t)(c.pos - TS_HANG_MSG_HEADER);
  int32_t type = m->type, flags = 0;
  codec_t h = {.out = buf, .len = TS_HANG_MSG_HEADER};
  io_header(&h, &magic, &type, &flags, &reserved, &plen);
  return c.pos;
}

ts_status_t ts_hang_msg_decode(const uint8_t *buf, size_t len, ts_hang_msg_t *out, size_t *consumed) {
  *consumed = 0;
  /* Check the magic on what we have so far, so garbage is rejected before
   * a whole header arrived. */
  static const uint8_t magic[4] = {'T', 'S', 'H', '1'};
  for (size_t i = 0; i < len && i < 4; i++)
    if (buf[i] != magic[i]) return TS_ERR_PARSE;
  if (len < TS_HANG_MSG_HEADER) return TS_INPROGRESS;
  codec_t h = {.in = buf, .len = TS_HANG_MSG_HEADER};
  uint32_t got_magic = 0, reserved = 0, plen = 0;
  int32_t type = 0, flags = 0;
  io_header(&h, &got_magic, &type, &flags, &reserved, &plen);
  if (type < TS_HANG_MSG_HELLO || type >= TS_HANG_MSG_TYPE_END || flags || reserved || plen > TS_HANG_MSG_MAX)
    return TS_ERR_PARSE;
  if (len - TS_HANG_MSG_HEADER < plen) return TS_INPROGRESS;

  memset(out, 0, sizeof *out);
  out->type = type;
  out->state.instr = -1;
  out->state.waiting_on = -1;
  codec_t c = {.in = buf + TS_HANG_MSG_HEADER, .len = plen};
  io_payload(&c, out);
  if (c.bad || c.pos != plen) return TS_ERR_PARSE; /* truncated fields or trailing bytes */
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
