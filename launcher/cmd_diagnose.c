/* tessera diagnose: prints hang digests (the JSON the coordinator writes
 * with --hang-digest) as text again and, given several, the hosts that
 * recur in them (MXLA's advice: a host in more than three hang events is
 * very likely faulty). */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "ts_hang.h"
#include "ts_launcher.h"

#define RECURRING 3 /* more than this many events: likely faulty */

typedef struct {
  char host[TS_HANG_HOST_MAX];
  int events;
  int by_cause[TS_HANG_CAUSE_COUNT];
} host_count_t;

static void usage(FILE *f) {
  fprintf(f, "usage: tessera diagnose [--collectives] DIGEST.json...\n"
             "\n"
             "Prints hang digests written by `tessera run --hang-digest FILE` as text. Given several, also\n"
             "counts the hang events each culprit host appears in: a host in more than %d events is likely\n"
             "faulty.\n"
             "\n"
             "  --collectives  also where the ranks' collective sequences diverge (the flight recorder:\n"
             "                 each rank's newest collective records)\n"
             "  -h, --help  this text\n",
          RECURRING);
}

/* Adds the culprit hosts of one digest (each host once per event). */
static bool count_hosts(const ts_hang_digest_t *d, host_count_t **hosts, int *nhosts) {
  const ts_hang_verdict_t *v = &d->verdict;
  for (int i = 0; i < v->nculprits; i++) {
    const char *h = d->workers[v->culprits[i]].host;
    bool seen = false;
    for (int j = 0; j < i && !seen; j++) seen = !strcmp(d->workers[v->culprits[j]].host, h);
    if (seen) continue;
    int k;
    for (k = 0; k < *nhosts; k++)
      if (!strcmp((*hosts)[k].host, h)) break;
    if (k == *nhosts) {
      host_count_t *p = ts_realloc(*hosts, sizeof *p * (size_t)(*nhosts + 1));
      if (!p) return false;
      *hosts = p;
      memset(&p[k], 0, sizeof p[k]);
      snprintf(p[k].host, sizeof p[k].host, "%s", h);
      (*nhosts)++;
    }
    (*hosts)[k].events++;
    (*hosts)[k].by_cause[v->cause]++;
  }
  return true;
}

int ts_cmd_diagnose(int argc, char **argv) {
  static const struct option opts[] = {
      {"help", no_argument, NULL, 'h'}, {"collectives", no_argument, NULL, 'C'}, {NULL, 0, NULL, 0}};
  int c;
  bool collectives = false;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    if (c == 'h') {
      usage(stdout);
      return 0;
    }
    if (c == 'C') {
      collectives = true;
      continue;
    }
    fprintf(stderr, "tessera diagnose: error: unknown option '%s'\n", argv[optind - 1]);
    return 2;
  }
  int nfiles = argc - optind;
  if (nfiles < 1) {
    fprintf(stderr, "tessera diagnose: error: no digest given (tessera diagnose DIGEST.json...)\n");
    return 2;
  }
  host_count_t *hosts = NULL;
  int nhosts = 0, rc = 0;
  ts_buf_t out = {0};
  for (int f = optind; f < argc; f++) {
    ts_diag_t diag = {0};
    char *text = NULL;
    size_t len = 0;
    ts_hang_digest_t d;
    ts_status_t st = ts_read_file(argv[f], &text, &len, &diag);
    if (st == TS_OK) st = ts_hang_digest_parse_json(text, len, argv[f], &d, &diag);
    ts_free(text);
    if (st != TS_OK) {
      fprintf(stderr, "tessera diagnose: %s\n", diag.text ? diag.text : ts_status_string(st));
      ts_diag_free(&diag);
      rc = ts_status_exit_code(st);
      goto done;
    }
    if (nfiles > 1) ts_buf_printf(&out, "%s==> %s <==\n", f > optind ? "\n" : "", argv[f]);
    ts_hang_digest_text(&d, &out);
    if (collectives) ts_hang_digest_collectives(&d, &out);
    bool ok = count_hosts(&d, &hosts, &nhosts);
    ts_hang_digest_free(&d);
    if (!ok || out.oom) {
      fprintf(stderr, "tessera diagnose: error: out of memory\n");
      rc = 4;
      goto done;
    }
  }
  if (nfiles > 1) {
    ts_buf_printf(&out, "\nCulprit hosts across %d hang events:\n", nfiles);
    /* Most events first. */
    for (int i = 1; i < nhosts; i++)
      for (int j = i; j > 0 && hosts[j].events > hosts[j - 1].events; j--) {
        host_count_t t = hosts[j];
        hosts[j] = hosts[j - 1];
        hosts[j - 1] = t;
      }
    if (!nhosts) ts_buf_puts(&out, "  (no culprit named in any digest)\n");
    for (int i = 0; i < nhosts; i++) {
      ts_buf_printf(&out, "  %s: %d event%s (", hosts[i].host, hosts[i].events, hosts[i].events == 1 ? "" : "s");
      bool first = true;
      for (int k = 0; k < TS_HANG_CAUSE_COUNT; k++)
        if (hosts[i].by_cause[k]) {
          ts_buf_printf(&out, "%s%s x%d", first ? "" : ", ", ts_hang_cause_key((ts_hang_cause_t)k),
                        hosts[i].by_cause[k]);
          first = false;
        }
      ts_buf_puts(&out, ")");
      if (hosts[i].events > RECURRING)
        ts_buf_printf(&out, ": likely faulty (in more than %d hang events); remove it from the fleet", RECURRING);
      ts_buf_putc(&out, '\n');
    }
  }
  fputs(out.data ? out.data : "", stdout);
done:
  ts_buf_free(&out);
  ts_free(hosts);
  return rc;
}
