/* Checkpoint manifests (manifest.json, cJSON), the step directories of a
 * checkpoint folder, shard file headers and checksums, and the flags of
 * tessera run. */
#include "ckpt_internal.h"
#include "ts_npy.h"

#include <cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

/* ---- flags -------------------------------------------------------------- */

const char ts_ckpt_flags_help[] =
    "  --checkpoint-dir DIR  every rank writes its shards of the training state (the\n"
    "                        parameters --loop feeds back) to DIR/step-K/ every\n"
    "                        --checkpoint-every steps, in the background\n"
    "  --checkpoint-every K  the checkpoint period in steps (default: the last step only)\n"
    "  --keep N              complete checkpoints kept (default 3; older ones are removed)\n"
    "  --resume DIR          continue from the newest complete checkpoint in DIR (before\n"
    "                        --steps), resharding when the module's mesh differs\n";

void ts_ckpt_flags_default(ts_ckpt_flags_t *f) { *f = (ts_ckpt_flags_t){.keep = 3}; }

bool ts_ckpt_flag_is(int code) { return code >= TS_CKPT_OPT_DIR && code <= TS_CKPT_OPT_RESUME; }

bool ts_ckpt_flags_any(const ts_ckpt_flags_t *f) { return f->dir || f->resume; }

static bool parse_count(const char *cmd, const char *flag, const char *s, int64_t *out) {
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno || end == s || *end || v < 1) {
    fprintf(stderr, "tessera %s: error: %s wants a positive integer, got '%s'\n", cmd, flag, s);
    return false;
  }
  *out = v;
  return true;
}

bool ts_ckpt_flag_parse(const char *cmd, int code, const char *arg, ts_ckpt_flags_t *f) {
  switch (code) {
  case TS_CKPT_OPT_DIR: f->dir = arg; return true;
  case TS_CKPT_OPT_EVERY: return parse_count(cmd, "--checkpoint-every", arg, &f->every);
  case TS_CKPT_OPT_KEEP: return parse_count(cmd, "--keep", arg, &f->keep);
  case TS_CKPT_OPT_RESUME: f->resume = arg; return true;
  default: return false;
  }
}

/* ---- small helpers ---------------------------------------------------- */

void ckpt_step_path(char *buf, size_t n, const char *dir, int64_t step, bool tmp) {
  snprintf(buf, n, "%s/step-%lld%s", dir, (long long)step, tmp ? ".tmp" : "");
}

int ckpt_mkdir(const char *path) {
  if (mkdir(path, 0777) == 0 || errno == EEXIST) return 0;
  return -1;
}

int ckpt_fsync_dir(const char *path) {
  int fd = open(path, O_RDONLY | O_DIRECTORY);
  if (fd < 0) return -1;
  int rc = fsync(fd);
  int e = errno;
  close(fd);
  errno = e;
  return rc;
}

int ckpt_remove_dir(const char *path) {
  DIR *d = opendir(path);
  if (!d) return errno == ENOENT ? 0 : -1;
  struct dirent *e;
  char p[PATH_MAX];
  while ((e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    snprintf(p, sizeof p, "%s/%s", path, e->d_name);
    unlink(p);
  }
  closedir(d);
  return rmdir(path);
}

uint32_t ckpt_crc32(uint32_t crc, const void *p, size_t n) {
  const Bytef *b = p;
  while (n > 0) {
    uInt chunk = n > (1u << 30) ? (1u << 30) : (uInt)n;
    crc = (uint32_t)crc32(crc, b, chunk);
    b += chunk;
    n -= chunk;
  }
  return crc;
}

/* The op_name="..." of a metadata blob, unescaped; NULL when none. */
static const char *op_name(ts_arena_t *a, const char *blob) {
  const char *k = blob ? strstr(blob, "op_name=\"") : NULL;
  if (!k) return NULL;
  k += 9;
  size_t n = 0;
  char *out = ts_arena_alloc(a, strlen(k) + 1);
  if (!out) return NULL;
  for (; *k && *k != '"'; k++) {
    if (*k == '\\' && k[1]) k++;
    out[n++] = *k;
  }
  out[n] = 0;
  return n ? out : NULL;
}

const char *ckpt_param_name(ts_arena_t *a, const ts_hlo_instr_t *param) {
  const ts_hlo_attr_t *md = ts_hlo_instr_attr(param, "metadata");
  const char *n = md && md->kind == TS_ATTR_BLOB ? op_name(a, md->v.s) : NULL;
  return n ? n : param->name;
}

/* Raw-bits dtype of the same size (ckpt_internal.h). */
static const char *raw_descr(ts_elem_t e) {
  switch (e) {
  case TS_PRED: case TS_S8: case TS_S16: case TS_S32: case TS_S64: case TS_U8: case TS_U16: case TS_U32:
  case TS_U64: case TS_F16: case TS_F32: case TS_F64: case TS_C64: case TS_C128: return ts_npy_descr(e);
  default: break;
  }
  switch (ts_elem_storage_bytes(e)) {
  case 1: return ts_elem_is_signed_int(e) ? "|i1" : "|u1";
  case 2: return "<u2";
  case 4: return "<u4";
  case 8: return "<u8";
  default: return NULL;
  }
}

size_t ckpt_npy_header(ts_elem_t elem, int rank, const int64_t *dims, char *buf, size_t cap) {
  const char *descr = raw_descr(elem);
  if (!descr) return 0;
  char d[1024];
  int n = snprintf(d, sizeof d, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
  for (int k = 0; k < rank && n < (int)sizeof d; k++)
    n += snprintf(d + n, sizeof d - (size_t)n, k ? ", %lld" : "%lld", (long long)dims[k]);
  if (n < (int)sizeof d) n += snprintf(d + n, sizeof d - (size_t)n, rank == 1 ? ",), }" : "), }");
  if (n >= (int)sizeof d) return 0;
  size_t total = (10 + (size_t)n + 1 + 63) / 64 * 64, hlen = total - 10;
  if (total > cap || hlen > 65535) return 0;
  memcpy(buf, "\x93NUMPY\x01\x00", 8);
  buf[8] = (char)(hlen & 0xff);
  buf[9] = (char)(hlen >> 8);
  memcpy(buf + 10, d, (size_t)n);
  memset(buf + 10 + n, ' ', total - 10 - (size_t)n - 1);
  buf[total - 1] = '\n';
  return total;
}

ts_status_t ckpt_write_synced(const char *path, const void *data, size_t len, ts_diag_t *diag) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0666);
  if (fd < 0) return ts_diag_path_error(diag, path, TS_ERR_SYSTEM, "cannot create: %s", strerror(errno));
  const char *p = data;
  while (len > 0) {
    ssize_t w = write(fd, p, len);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      int e = w < 0 ? errno : ENOSPC;
      close(fd);
      return ts_diag_path_error(diag, path, TS_ERR_SYSTEM, "cannot write: %s", strerror(e));
    }
    p += w;
    len -= (size_t)w;
  }
  if (fsync(fd) != 0 || close(fd) != 0)
    return ts_diag_path_error(diag, path, TS_ERR_SYSTEM, "cannot write: %s", strerror(errno));
  return TS_OK;
}

/* ---- boxes ---------------------------------------------------------------- */

ts_status_t ckpt_box_runs(int rank, const int64_t *extent, const int64_t *dst_dims, const int64_t *dst_off,
                          const int64_t *src_dims, const int64_t *src_off, ckpt_run_fn run, void *arg) {
  for (int d = 0; d < rank; d++)
    if (extent[d] <= 0) return TS_OK;
  /* Row-major strides; trailing dims held whole on both sides merge. */
  int64_t dstr[TS_CKPT_MAX_RANK], sstr[TS_CKPT_MAX_RANK];
  int64_t ds = 1, ss = 1;
  for (int d = rank - 1; d >= 0; d--) {
    dstr[d] = ds;
    sstr[d] = ss;
    ds *= dst_dims[d];
    ss *= src_dims[d];
  }
  int inner = rank; /* dims [inner, rank) form one run */
  int64_t len = 1;
  while (inner > 0) {
    int d = inner - 1;
    len *= extent[d];
    inner = d;
    if (extent[d] != dst_dims[d] || extent[d] != src_dims[d]) break;
  }
  int64_t idx[TS_CKPT_MAX_RANK] = {0};
  for (;;) {
    int64_t da = 0, sa = 0;
    for (int d = 0; d < rank; d++) {
      int64_t i = d < inner ? idx[d] : 0;
      da += (dst_off[d] + i) * dstr[d];
      sa += (src_off[d] + i) * sstr[d];
    }
    TS_CHECK(run(arg, da, sa, len));
    int d = inner - 1;
    while (d >= 0 && ++idx[d] == extent[d]) idx[d--] = 0;
    if (d < 0) return TS_OK;
  }
}

/* ---- step directories ---------------------------------------------------- */

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

static ts_status_t list_steps(const char *dir, bool tmp, int64_t **steps, int *n, ts_diag_t *diag) {
  *steps = NULL;
  *n = 0;
  DIR *d = opendir(dir);
  if (!d) {
    if (errno == ENOENT) return TS_OK;
    return ts_diag_path_error(diag, dir, TS_ERR_INVALID_ARGUMENT, "cannot open: %s", strerror(errno));
  }
  int cap = 0;
  struct dirent *e;
  ts_status_t st = TS_OK;
  while ((e = readdir(d)) != NULL) {
    if (strncmp(e->d_name, "step-", 5) != 0) continue;
    char *end;
    errno = 0;
    long long k = strtoll(e->d_name + 5, &end, 10);
    if (errno || end == e->d_name + 5 || k < 0) continue;
    if (tmp ? strcmp(end, ".tmp") != 0 : *end != 0) continue;
    if (!tmp) {
      char p[PATH_MAX];
      struct stat sb;
      snprintf(p, sizeof p, "%s/%s/manifest.json", dir, e->d_name);
      if (stat(p, &sb) != 0) continue; /* not ours */
    }
    if (*n == cap) {
      cap = cap ? 2 * cap : 16;
      int64_t *g = ts_realloc(*steps, (size_t)cap * sizeof *g);
      if (!g) {
        st = TS_ERR_NOMEM;
        break;
      }
      *steps = g;
    }
    (*steps)[(*n)++] = k;
  }
  closedir(d);
  if (st != TS_OK) {
    ts_free(*steps);
    *steps = NULL;
    *n = 0;
    return st;
  }
  if (*n) qsort(*steps, (size_t)*n, sizeof **steps, cmp_i64);
  return TS_OK;
}

ts_status_t ts_ckpt_list_steps(const char *dir, int64_t **steps, int *n, ts_diag_t *diag) {
  return list_steps(dir, false, steps, n, diag);
}

ts_status_t ts_ckpt_list_partial(const char *dir, int64_t **steps, int *n, ts_diag_t *diag) {
  return list_steps(dir, true, steps, n, diag);
}

/* ---- JSON ----------------------------------------------------------------- */

static cJSON *i64_array(const int64_t *v, int n) {
  cJSON *a = cJSON_CreateArray();
  for (int i = 0; a && i < n; i++) cJSON_AddItemToArray(a, cJSON_CreateNumber((double)v[i]));
  return a;
}

ts_status_t ts_ckpt_manifest_json(const ts_ckpt_manifest_t *m, char **out) {
  cJSON *root = cJSON_CreateObject();
  if (!root) return TS_ERR_NOMEM;
  char seed[32];
  snprintf(seed, sizeof seed, "%" PRIu64, m->seed);
  cJSON_AddStringToObject(root, "format", TS_CKPT_FORMAT);
  cJSON_AddNumberToObject(root, "version", TS_CKPT_VERSION);
  cJSON_AddNumberToObject(root, "step", (double)m->step);
  cJSON_AddStringToObject(root, "module", m->module ? m->module : "");
  cJSON_AddNumberToObject(root, "num_devices", m->ndevices);
  cJSON *in = cJSON_AddObjectToObject(root, "inputs");
  if (in) {
    cJSON_AddNumberToObject(in, "next_step", (double)m->next_step);
    cJSON_AddStringToObject(in, "random_seed", seed);
    cJSON_AddNumberToObject(in, "random_counter", (double)m->next_step);
    if (m->inputs_dir) cJSON_AddStringToObject(in, "dir", m->inputs_dir);
    else cJSON_AddNullToObject(in, "dir");
  }
  cJSON *arrays = cJSON_AddArrayToObject(root, "arrays");
  for (int k = 0; arrays && k < m->narrays; k++) {
    const ts_ckpt_marray_t *a = &m->arrays[k];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToArray(arrays, o);
    cJSON_AddStringToObject(o, "name", a->name);
    cJSON_AddNumberToObject(o, "param", a->param);
    cJSON_AddStringToObject(o, "dtype", ts_elem_name(a->elem));
    cJSON_AddItemToObject(o, "shape", i64_array(a->dims, a->rank));
    cJSON_AddStringToObject(o, "sharding", a->sharding ? a->sharding : "{replicated}");
    cJSON *sh = cJSON_AddArrayToObject(o, "shards");
    for (int s = 0; sh && s < a->nshards; s++) {
      const ts_ckpt_shard_t *x = &a->shards[s];
      const ts_ckpt_file_t *f = &m->files[x->file];
      cJSON *so = cJSON_CreateObject();
      cJSON_AddItemToArray(sh, so);
      cJSON_AddStringToObject(so, "file", f->name);
      cJSON_AddNumberToObject(so, "offset", (double)f->offset);
      cJSON_AddItemToObject(so, "start", i64_array(x->start, a->rank));
      cJSON_AddItemToObject(so, "limit", i64_array(x->limit, a->rank));
    }
  }
  cJSON *files = cJSON_AddArrayToObject(root, "files");
  for (int i = 0; files && i < m->nfiles; i++) {
    const ts_ckpt_file_t *f = &m->files[i];
    char crc[16];
    snprintf(crc, sizeof crc, "%08" PRIx32, f->crc32);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToArray(files, o);
    cJSON_AddStringToObject(o, "name", f->name);
    cJSON_AddNumberToObject(o, "offset", (double)f->offset);
    cJSON_AddNumberToObject(o, "bytes", (double)f->bytes);
    cJSON_AddStringToObject(o, "crc32", crc);
    cJSON_AddNumberToObject(o, "device", f->device);
  }
  char *text = cJSON_Print(root);
  cJSON_Delete(root);
  if (!text) return TS_ERR_NOMEM;
  *out = ts_strdup(text);
  cJSON_free(text);
  return *out ? TS_OK : TS_ERR_NOMEM;
}

void ts_ckpt_manifest_free(ts_ckpt_manifest_t *m) {
  if (!m) return;
  for (int k = 0; k < m->narrays; k++) {
    ts_free(m->arrays[k].name);
    ts_free(m->arrays[k].sharding);
    ts_free(m->arrays[k].shards);
  }
  for (int i = 0; i < m->nfiles; i++) ts_free(m->files[i].name);
  ts_free(m->arrays);
  ts_free(m->files);
  ts_free(m->inputs_dir);
  ts_free(m->module);
  memset(m, 0, sizeof *m);
}

static bool get_i64(const cJSON *o, const char *key, int64_t *out) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  if (!cJSON_IsNumber(v)) return false;
  *out = (int64_t)v->valuedouble;
  return true;
}

static bool get_dims(const cJSON *o, const char *key, int64_t *dims, int *rank) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  if (!cJSON_IsArray(v)) return false;
  int n = cJSON_GetArraySize(v);
  if (n > TS_CKPT_MAX_RANK) return false;
  for (int i = 0; i < n; i++) {
    const cJSON *x = cJSON_GetArrayItem(v, i);
    if (!cJSON_IsNumber(x) || x->valuedouble < 0) return false;
    dims[i] = (int64_t)x->valuedouble;
  }
  *rank = n;
  return true;
}

static const char *get_str(const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* Fills m from the parsed JSON; returns what is wrong, NULL when nothing. */
static const char *from_json(const cJSON *root, ts_ckpt_manifest_t *m, bool *oom) {
  const char *fmt = get_str(root, "format");
  if (!fmt || strcmp(fmt, TS_CKPT_FORMAT) != 0) return "not a tessera checkpoint manifest (no \"format\": \"" TS_CKPT_FORMAT "\")";
  int64_t v;
  if (!get_i64(root, "version", &v) || v != TS_CKPT_VERSION) return "unsupported manifest version";
  if (!get_i64(root, "step", &m->step)) return "no \"step\"";
  const char *mod = get_str(root, "module");
  m->module = ts_strdup(mod ? mod : "");
  int64_t nd = 0;
  get_i64(root, "num_devices", &nd);
  m->ndevices = (int)nd;
  const cJSON *in = cJSON_GetObjectItemCaseSensitive(root, "inputs");
  if (!cJSON_IsObject(in) || !get_i64(in, "next_step", &m->next_step)) return "no \"inputs\".\"next_step\"";
  const char *seed = get_str(in, "random_seed");
  if (!seed) return "no \"inputs\".\"random_seed\"";
  m->seed = strtoull(seed, NULL, 10);
  const char *idir = get_str(in, "dir");
  if (idir && !(m->inputs_dir = ts_strdup(idir))) goto nomem;
  const cJSON *files = cJSON_GetObjectItemCaseSensitive(root, "files");
  if (!cJSON_IsArray(files)) return "no \"files\"";
  m->nfiles = cJSON_GetArraySize(files);
  if (!(m->files = ts_calloc((size_t)m->nfiles + 1, sizeof *m->files))) goto nomem;
  for (int i = 0; i < m->nfiles; i++) {
    const cJSON *o = cJSON_GetArrayItem(files, i);
    ts_ckpt_file_t *f = &m->files[i];
    const char *name = get_str(o, "name"), *crc = get_str(o, "crc32");
    int64_t dev = 0;
    if (!name || !crc || !get_i64(o, "offset", &f->offset) || !get_i64(o, "bytes", &f->bytes) || strchr(name, '/'))
      return "a \"files\" entry lacks name, offset, bytes or crc32";
    get_i64(o, "device", &dev);
    f->device = (int)dev;
    f->crc32 = (uint32_t)strtoul(crc, NULL, 16);
    if (!(f->name = ts_strdup(name))) goto nomem;
  }
  const cJSON *arrays = cJSON_GetObjectItemCaseSensitive(root, "arrays");
  if (!cJSON_IsArray(arrays)) return "no \"arrays\"";
  m->narrays = cJSON_GetArraySize(arrays);
  if (!(m->arrays = ts_calloc((size_t)m->narrays + 1, sizeof *m->arrays))) goto nomem;
  for (int k = 0; k < m->narrays; k++) {
    const cJSON *o = cJSON_GetArrayItem(arrays, k);
    ts_ckpt_marray_t *a = &m->arrays[k];
    const char *name = get_str(o, "name"), *dt = get_str(o, "dtype"), *sh = get_str(o, "sharding");
    int64_t p;
    if (!name || !dt || !get_i64(o, "param", &p) || !get_dims(o, "shape", a->dims, &a->rank))
      return "an \"arrays\" entry lacks name, param, dtype or shape";
    if (!ts_elem_from_name(dt, strlen(dt), &a->elem) || !ts_elem_is_array(a->elem)) return "an array has an unknown dtype";
    a->param = (int)p;
    if (!(a->name = ts_strdup(name)) || !(a->sharding = ts_strdup(sh ? sh : "{replicated}"))) goto nomem;
    const cJSON *shards = cJSON_GetObjectItemCaseSensitive(o, "shards");
    if (!cJSON_IsArray(shards)) return "an array has no \"shards\"";
    a->nshards = cJSON_GetArraySize(shards);
    if (!(a->shards = ts_calloc((size_t)a->nshards + 1, sizeof *a->shards))) goto nomem;
    for (int s = 0; s < a->nshards; s++) {
      const cJSON *so = cJSON_GetArrayItem(shards, s);
      ts_ckpt_shard_t *x = &a->shards[s];
      const char *file = get_str(so, "file");
      int r1, r2;
      if (!file || !get_dims(so, "start", x->start, &r1) || !get_dims(so, "limit", x->limit, &r2) || r1 != a->rank ||
          r2 != a->rank)
        return "a shard lacks file, start or limit of the array's rank";
      x->file = -1;
      for (int i = 0; i < m->nfiles; i++)
        if (strcmp(m->files[i].name, file) == 0) x->file = i;
      if (x->file < 0) return "a shard names a file \"files\" does not list";
      int64_t count = 1;
      for (int d = 0; d < a->rank; d++) {
        if (x->start[d] > x->limit[d] || x->limit[d] > a->dims[d]) return "a shard's box lies outside its array";
        count *= x->limit[d] - x->start[d];
      }
      if (count * ts_elem_storage_bytes(a->elem) != m->files[x->file].bytes)
        return "a shard's box and its file's bytes disagree";
    }
  }
  return NULL;
nomem:
  *oom = true;
  return "out of memory";
}

ts_status_t ts_ckpt_manifest_read(const char *stepdir, ts_ckpt_manifest_t *out, ts_diag_t *diag) {
  memset(out, 0, sizeof *out);
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/manifest.json", stepdir);
  char *text;
  size_t len;
  TS_CHECK(ts_read_file(path, &text, &len, diag));
  cJSON *root = cJSON_ParseWithLength(text, len);
  ts_free(text);
  if (!root) return ts_diag_path_error(diag, path, TS_ERR_PARSE, "not valid JSON");
  bool oom = false;
  const char *why = from_json(root, out, &oom);
  cJSON_Delete(root);
  if (why) {
    ts_ckpt_manifest_free(out);
    if (oom) return TS_ERR_NOMEM;
    return ts_diag_path_error(diag, path, TS_ERR_PARSE, "%s", why);
  }
  return TS_OK;
}

/* ---- reading shards ------------------------------------------------------- */

ts_status_t ts_ckpt_verify_file(const char *stepdir, const ts_ckpt_manifest_t *m, int f, ts_diag_t *diag) {
  const ts_ckpt_file_t *file = &m->files[f];
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/%s", stepdir, file->name);
  int fd = open(path, O_RDONLY);
  if (fd < 0) return ts_diag_path_error(diag, path, TS_ERR_VERIFY, "shard missing: %s", strerror(errno));
  enum { CHUNK = 1 << 22 };
  char *buf = ts_malloc(CHUNK);
  if (!buf) {
    close(fd);
    return TS_ERR_NOMEM;
  }
  uint32_t crc = ckpt_crc32(0, NULL, 0);
  int64_t total = 0;
  ssize_t r;
  while ((r = read(fd, buf, CHUNK)) > 0) {
    crc = ckpt_crc32(crc, buf, (size_t)r);
    total += r;
  }
  int e = errno;
  ts_free(buf);
  close(fd);
  if (r < 0) return ts_diag_path_error(diag, path, TS_ERR_VERIFY, "cannot read: %s", strerror(e));
  if (total != file->offset + file->bytes)
    return ts_diag_path_error(diag, path, TS_ERR_VERIFY, "truncated or padded shard: %lld bytes, the manifest says %lld",
                              (long long)total, (long long)(file->offset + file->bytes));
  if (crc != file->crc32)
    return ts_diag_path_error(diag, path, TS_ERR_VERIFY, "checksum mismatch: crc32 %08" PRIx32 ", the manifest says %08" PRIx32,
                              crc, file->crc32);
  return TS_OK;
}

typedef struct {
  int fd;
  int64_t base; /* the file's data offset */
  char *dst;
  size_t es;
  const char *path;
  ts_diag_t *diag;
} pread_arg_t;

static ts_status_t pread_run(void *arg, int64_t dst_at, int64_t src_at, int64_t n) {
  pread_arg_t *a = arg;
  char *p = a->dst + (size_t)dst_at * a->es;
  size_t want = (size_t)n * a->es;
  off_t off = (off_t)(a->base + src_at * (int64_t)a->es);
  while (want > 0) {
    ssize_t r = pread(a->fd, p, want, off);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0)
      return ts_diag_path_error(a->diag, a->path, TS_ERR_VERIFY, "%s", r < 0 ? strerror(errno) : "truncated shard");
    p += r;
    off += r;
    want -= (size_t)r;
  }
  return TS_OK;
}

ts_status_t ts_ckpt_read_box(const char *stepdir, const ts_ckpt_manifest_t *m, int k, const int64_t *start,
                             const int64_t *limit, void *dst, const int64_t *dst_dims, ts_diag_t *diag) {
  const ts_ckpt_marray_t *a = &m->arrays[k];
  size_t es = (size_t)ts_elem_storage_bytes(a->elem);
  int64_t want = 1, got = 0;
  for (int d = 0; d < a->rank; d++) want *= limit[d] - start[d];
  for (int s = 0; s < a->nshards; s++) {
    const ts_ckpt_shard_t *x = &a->shards[s];
    int64_t ext[TS_CKPT_MAX_RANK], doff[TS_CKPT_MAX_RANK], soff[TS_CKPT_MAX_RANK], sdims[TS_CKPT_MAX_RANK];
    int64_t n = 1;
    for (int d = 0; d < a->rank; d++) {
      int64_t lo = start[d] > x->start[d] ? start[d] : x->start[d];
      int64_t hi = limit[d] < x->limit[d] ? limit[d] : x->limit[d];
      ext[d] = hi > lo ? hi - lo : 0;
      doff[d] = lo - start[d];
      soff[d] = lo - x->start[d];
      sdims[d] = x->limit[d] - x->start[d];
      n *= ext[d];
    }
    if (n == 0) continue;
    const ts_ckpt_file_t *f = &m->files[x->file];
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", stepdir, f->name);
    int fd = open(path, O_RDONLY);
    if (fd < 0) return ts_diag_path_error(diag, path, TS_ERR_VERIFY, "shard missing: %s", strerror(errno));
    pread_arg_t pa = {fd, f->offset, dst, es, path, diag};
    ts_status_t st = ckpt_box_runs(a->rank, ext, dst_dims, doff, sdims, soff, pread_run, &pa);
    close(fd);
    TS_CHECK(st);
    got += n;
    /* Shards of one array are disjoint (replicas were written once), so
     * once the box is covered no later shard overlaps it. */
    if (got >= want) break;
  }
  if (got < want) {
    ts_diag_plain(diag, "%s: array %s: the shards cover %lld of the %lld elements asked for", stepdir, a->name,
                  (long long)got, (long long)want);
    return TS_ERR_VERIFY;
  }
  return TS_OK;
}

ts_status_t ts_ckpt_assemble(const char *stepdir, const ts_ckpt_manifest_t *m, int k, void *out, ts_diag_t *diag) {
  const ts_ckpt_marray_t *a = &m->arrays[k];
  int64_t start[TS_CKPT_MAX_RANK] = {0};
  return ts_ckpt_read_box(stepdir, m, k, start, a->dims, out, a->dims, diag);
}
