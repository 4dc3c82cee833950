/* Helpers shared by the subcommands. */
#include "ts_launcher.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool ts_cli_parse_seed(const char *cmd, const char *s, uint64_t *out) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || end == s || *end || s[0] == '-') {
    fprintf(stderr, "tessera %s: error: --random-inputs wants a non-negative integer seed, got '%s'\n", cmd, s);
    return false;
  }
  *out = v;
  return true;
}

bool ts_cli_parse_int(const char *cmd, const char *flag, const char *what, int64_t lo, const char *s, int64_t *out) {
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno || end == s || *end || v < lo) {
    fprintf(stderr, "tessera %s: error: %s wants %s, got '%s'\n", cmd, flag, what, s);
    return false;
  }
  *out = v;
  return true;
}

bool ts_cli_parse_count(const char *cmd, const char *flag, const char *s, int64_t *out) {
  return ts_cli_parse_int(cmd, flag, "a positive integer", 1, s, out);
}

bool ts_cli_parse_positive(const char *cmd, const char *flag, const char *s, double *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || end == s || *end || !(v > 0) || !isfinite(v)) {
    fprintf(stderr, "tessera %s: error: %s wants a positive number, got '%s'\n", cmd, flag, s);
    return false;
  }
  *out = v;
  return true;
}

bool ts_cli_parse_bytes(const char *cmd, const char *flag, const char *s, uint64_t *out) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  uint64_t mul = 1;
  if (!errno && end != s && end[0] && !end[1]) {
    switch (end[0]) {
    case 'k': case 'K': mul = UINT64_C(1) << 10; end++; break;
    case 'm': case 'M': mul = UINT64_C(1) << 20; end++; break;
    case 'g': case 'G': mul = UINT64_C(1) << 30; end++; break;
    case 't': case 'T': mul = UINT64_C(1) << 40; end++; break;
    default: break;
    }
  }
  if (errno || end == s || *end || s[0] == '-' || v == 0 || v > UINT64_MAX / mul) {
    fprintf(stderr, "tessera %s: error: %s wants a positive byte count (suffixes K, M, G, T), got '%s'\n", cmd, flag, s);
    return false;
  }
  *out = v * mul;
  return true;
}

bool ts_sched_flag_parse(const char *cmd, int code, const char *arg, ts_sched_opts_t *o) {
  if (code == TS_SFLAG_MEMORY) return ts_cli_parse_bytes(cmd, "--memory-limit", arg, &o->memory_limit);
  TS_ASSERT(code == TS_SFLAG_OVERLAP);
  if (ts_sched_parse_overlap_limit(arg, o)) return true;
  fprintf(stderr, "tessera %s: error: --overlap-limit wants %s, got '%s'\n", cmd, ts_sched_overlap_limit_syntax, arg);
  return false;
}

int ts_cli_getopt_error(const char *cmd, int c, const char *flag, void (*usage)(FILE *f)) {
  if (c == ':') {
    fprintf(stderr, "tessera %s: error: option '%s' needs a value\n", cmd, flag);
    return 2;
  }
  fprintf(stderr, "tessera %s: error: unknown option '%s'\n", cmd, flag);
  usage(stderr);
  return 2;
}

ts_status_t ts_cli_write_output(const char *path, const char *data, size_t len, ts_diag_t *diag) {
  if (!path || strcmp(path, "-") == 0) {
    if (fwrite(data, 1, len, stdout) != len || fflush(stdout) != 0) {
      ts_diag_plain(diag, "cannot write to stdout: %s", strerror(errno));
      return TS_ERR_SYSTEM;
    }
    return TS_OK;
  }
  return ts_write_file_atomic(path, data, len, diag);
}

bool ts_cli_parse_platform(const char *cmd, const char *s, ts_platform_t *out) {
  if (strcmp(s, "cpu") == 0) *out = TS_PLATFORM_CPU;
  else if (strcmp(s, "gpu") == 0) *out = TS_PLATFORM_GPU;
  else {
    fprintf(stderr, "tessera %s: error: --platform wants cpu or gpu, got '%s'\n", cmd, s);
    return false;
  }
  return true;
}

int ts_cli_platform(const char *cmd, ts_platform_t asked, ts_platform_t *out, int *ndev) {
  *ndev = 0;
  *out = asked == TS_PLATFORM_DEFAULT ? (ts_gpu_default() ? TS_PLATFORM_GPU : TS_PLATFORM_CPU) : asked;
  if (*out == TS_PLATFORM_CPU) return -1;
  ts_diag_t d = {0};
  if (ts_gpu_device_count(ndev, &d) == TS_OK) return -1;
  const char *why = d.text ? d.text : "no CUDA device";
  if (strncmp(why, "error: ", 7) == 0) why += 7;
  fprintf(stderr, "tessera %s: error: --platform=gpu: %.*s\n", cmd, (int)strcspn(why, "\n"), why);
  ts_diag_free(&d);
  return 2;
}
