/* tessera checkpoint: inspect a checkpoint folder (steps, arrays, shardings,
 * sizes, checksums) and assemble a step's full arrays as .npy files. */
#include "ts_checkpoint.h"
#include "ts_launcher.h"
#include "ts_npy.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static void usage(FILE *f) {
  fprintf(f,
          "usage: tessera checkpoint inspect DIR [--step K]\n"
          "       tessera checkpoint assemble DIR [--step K] -o OUT/\n"
          "\n"
          "DIR is a --checkpoint-dir of tessera run. inspect lists its complete\n"
          "checkpoints (step-K/) and leftovers of interrupted writes (step-K.tmp/),\n"
          "then for step K (default: the newest) every array's shape, dtype,\n"
          "sharding and shard files, verifying every file's size and crc32 (exit 2\n"
          "when one is bad). assemble writes each array of step K whole, as\n"
          "OUT/param<P>.npy (P its parameter number, so that tessera run --inputs OUT\n"
          "starts from it), after the same verification.\n");
}

static ts_status_t pick_step(const char *dir, int64_t want, int64_t *steps, int n, int64_t *out, ts_diag_t *diag) {
  if (n == 0) {
    ts_diag_plain(diag, "%s: no complete checkpoint", dir);
    return TS_ERR_INVALID_ARGUMENT;
  }
  if (want < 0) {
    *out = steps[n - 1];
    return TS_OK;
  }
  for (int i = 0; i < n; i++)
    if (steps[i] == want) {
      *out = want;
      return TS_OK;
    }
  ts_diag_plain(diag, "%s: no complete checkpoint of step %lld", dir, (long long)want);
  return TS_ERR_INVALID_ARGUMENT;
}

/* Verifies every file; prints one line per bad one. Returns how many are bad. */
static int verify_all(const char *stepdir, const ts_ckpt_manifest_t *m, bool print_ok) {
  int bad = 0;
  for (int f = 0; f < m->nfiles; f++) {
    ts_diag_t d = {0};
    if (ts_ckpt_verify_file(stepdir, m, f, &d) != TS_OK) {
      printf("  BAD %s\n", d.text ? d.text : m->files[f].name);
      bad++;
    } else if (print_ok) {
      printf("  ok  %s (%lld bytes, crc32 %08x, device %d)\n", m->files[f].name,
             (long long)(m->files[f].offset + m->files[f].bytes), m->files[f].crc32, m->files[f].device);
    }
    ts_diag_free(&d);
  }
  return bad;
}

static int inspect(const char *dir, int64_t want, ts_diag_t *diag) {
  int64_t *steps = NULL, *partial = NULL;
  int n = 0, np = 0, rc = 0;
  ts_status_t st = ts_ckpt_list_steps(dir, &steps, &n, diag);
  if (st == TS_OK) st = ts_ckpt_list_partial(dir, &partial, &np, diag);
  int64_t step = 0;
  if (st == TS_OK) {
    printf("%s: %d complete checkpoint%s", dir, n, n == 1 ? "" : "s");
    for (int i = 0; i < n; i++) printf(i ? ", %lld" : n == 1 ? " (step %lld" : " (steps %lld", (long long)steps[i]);
    printf(n ? ")" : "");
    if (np) {
      printf("; incomplete (never read):");
      for (int i = 0; i < np; i++) printf(" step-%lld.tmp", (long long)partial[i]);
    }
    printf("\n");
    st = pick_step(dir, want, steps, n, &step, diag);
  }
  ts_ckpt_manifest_t m = {0};
  char stepdir[PATH_MAX];
  if (st == TS_OK) {
    snprintf(stepdir, sizeof stepdir, "%s/step-%lld", dir, (long long)step);
    st = ts_ckpt_manifest_read(stepdir, &m, diag);
  }
  if (st == TS_OK) {
    int64_t total = 0;
    for (int f = 0; f < m.nfiles; f++) total += m.files[f].bytes;
    printf("%s: step %lld of module %s on %d devices; next step %lld, random-input seed %llu%s%s\n", stepdir,
           (long long)m.step, m.module, m.ndevices, (long long)m.next_step, (unsigned long long)m.seed,
           m.inputs_dir ? ", inputs " : "", m.inputs_dir ? m.inputs_dir : "");
    printf("%d arrays, %d shard files, %.3f MB of data\n", m.narrays, m.nfiles, (double)total / 1e6);
    for (int k = 0; k < m.narrays; k++) {
      const ts_ckpt_marray_t *a = &m.arrays[k];
      printf("  %-24s param %-3d %s[", a->name, a->param, ts_elem_name(a->elem));
      for (int d = 0; d < a->rank; d++) printf(d ? ",%lld" : "%lld", (long long)a->dims[d]);
      printf("] %s: %d shard%s\n", a->sharding, a->nshards, a->nshards == 1 ? "" : "s");
      for (int s = 0; s < a->nshards; s++) {
        const ts_ckpt_shard_t *x = &a->shards[s];
        printf("      %-14s [", m.files[x->file].name);
        for (int d = 0; d < a->rank; d++)
          printf(d ? ", %lld:%lld" : "%lld:%lld", (long long)x->start[d], (long long)x->limit[d]);
        printf("] %lld bytes at offset %lld\n", (long long)m.files[x->file].bytes, (long long)m.files[x->file].offset);
      }
    }
    printf("checksums:\n");
    int bad = verify_all(stepdir, &m, true);
    printf("%s\n", bad ? "checksums: INVALID" : "checksums: valid");
    if (bad) rc = 2;
  }
  ts_ckpt_manifest_free(&m);
  ts_free(steps);
  ts_free(partial);
  return st != TS_OK ? ts_status_exit_code(st) : rc;
}

static int assemble(const char *dir, int64_t want, const char *out, ts_diag_t *diag) {
  int64_t *steps = NULL;
  int n = 0;
  int64_t step = 0;
  ts_ckpt_manifest_t m = {0};
  char stepdir[PATH_MAX], path[PATH_MAX];
  ts_status_t st = ts_ckpt_list_steps(dir, &steps, &n, diag);
  if (st == TS_OK) st = pick_step(dir, want, steps, n, &step, diag);
  if (st == TS_OK) {
    snprintf(stepdir, sizeof stepdir, "%s/step-%lld", dir, (long long)step);
    st = ts_ckpt_manifest_read(stepdir, &m, diag);
  }
  if (st == TS_OK && verify_all(stepdir, &m, false)) {
    ts_diag_plain(diag, "%s: invalid shard files (see above); nothing assembled", stepdir);
    st = TS_ERR_VERIFY;
  }
  if (st == TS_OK && mkdir(out, 0777) != 0 && errno != EEXIST)
    st = ts_diag_path_error(diag, out, TS_ERR_INVALID_ARGUMENT, "cannot create: %s", strerror(errno));
  for (int k = 0; st == TS_OK && k < m.narrays; k++) {
    const ts_ckpt_marray_t *a = &m.arrays[k];
    int64_t count = 1;
    for (int d = 0; d < a->rank; d++) count *= a->dims[d];
    void *buf = ts_malloc((size_t)count * (size_t)ts_elem_storage_bytes(a->elem) + 1);
    if (!buf) {
      st = TS_ERR_NOMEM;
      break;
    }
    st = ts_ckpt_assemble(stepdir, &m, k, buf, diag);
    snprintf(path, sizeof path, "%s/param%d.npy", out, a->param);
    if (st == TS_OK) st = ts_npy_write(path, a->elem, a->rank, a->dims, buf, diag);
    if (st == TS_OK) printf("%s: %s\n", path, a->name);
    ts_free(buf);
  }
  ts_ckpt_manifest_free(&m);
  ts_free(steps);
  return ts_status_exit_code(st);
}

int ts_cmd_checkpoint(int argc, char **argv) {
  static const struct option opts[] = {
      {"step", required_argument, NULL, 's'},
      {"output", required_argument, NULL, 'o'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  int64_t step = -1;
  const char *out = NULL;
  int c;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":ho:", opts, NULL)) != -1) {
    switch (c) {
    case 's': if (!ts_cli_parse_int("checkpoint", "--step", "a step number", 0, optarg, &step)) return 2; break;
    case 'o': out = optarg; break;
    case 'h': usage(stdout); return 0;
    default: return ts_cli_getopt_error("checkpoint", c, argv[optind - 1], usage);
    }
  }
  if (argc - optind != 2 || (strcmp(argv[optind], "inspect") != 0 && strcmp(argv[optind], "assemble") != 0)) {
    fprintf(stderr, "tessera checkpoint: error: want 'inspect DIR' or 'assemble DIR -o OUT'\n");
    usage(stderr);
    return 2;
  }
  bool asm_ = strcmp(argv[optind], "assemble") == 0;
  if (asm_ && !out) {
    fprintf(stderr, "tessera checkpoint: error: assemble needs -o OUT/\n");
    return 2;
  }
  ts_diag_t diag = {0};
  int rc = asm_ ? assemble(argv[optind + 1], step, out, &diag) : inspect(argv[optind + 1], step, &diag);
  fflush(stdout);
  if (diag.text) {
    fprintf(stderr, "tessera checkpoint: %s%s", strncmp(diag.text, "error: ", 7) && !strstr(diag.text, ": error: ") ? "error: " : "", diag.text);
    if (diag.text[strlen(diag.text) - 1] != '\n') fputc('\n', stderr);
  }
  ts_diag_free(&diag);
  fflush(stdout);
  return rc;
}
