/* The runtime's emulated cross-slice link (TESSERA_CROSS_SLICE_DELAY_US):
 * runs a per-device module on 4 threads as 2 slices with the knob set, a
 * hook that sleeps before one instruction (compute of a known length), and
 * the trace on, then checks what the knob promises with wide margins: a
 * crossing collective completes no earlier than post + delay (a lower bound
 * the knob guarantees exactly), its wait is the delay in program order and
 * near nothing when compute covers it, the post returns at once, collectives
 * that cross nothing are not delayed, and the results are still right.
 *
 *   test_xs_delay [--delay L_US[,BW_GBPS]] [--slices S] [--steps K] [--sleep-before NAME:MS]
 *                 [--delayed LIST] [--min-wait MS] [--max-wait MS]
 *                 [--min-complete MS] [--max-post MS] [--expect-out V[,V...]]
 *                 [--expect-error TEXT] MODULE.hlo
 *
 * --delayed LIST (default: every device) names the devices that pay:
 * --min-wait and --min-complete apply to them, --max-wait to the others (to
 * all when --min-wait is absent). Wait: the step's time in collective waits.
 * Complete: the last collective event's end minus the first one's begin
 * (its post). Post: from the first collective's post to the hook of NAME.
 * Each device runs K steps (default 3): the lower bounds (the knob's
 * guarantees) hold in every step, the upper bounds (where a loaded machine
 * adds noise) on the median step, so one stalled thread does not fail it.
 * --expect-out: every element of output 0 on device d is V[d] (one V: all). */
#include "ts_runtime.h"

#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NDEV 4
#define MAX_STEPS 15

typedef struct {
  const char *delay, *sleep_name, *expect_error, *path;
  double sleep_ms, min_wait, max_wait, min_complete, max_post;
  bool delayed[NDEV];
  int slices, steps, nexpect;
  double expect[NDEV];
} args_t;

typedef struct {
  const args_t *a;
  const ts_rt_program_t *p;
  ts_coll_comm_t *world;
  int dev, sleep_gindex;
  ts_status_t st;
  ts_diag_t diag;
  uint64_t hook_ns;          /* when the hook saw sleep_name */
  /* per step, in ms */
  double wait[MAX_STEPS], total[MAX_STEPS], complete[MAX_STEPS], post[MAX_STEPS];
  bool any_coll;             /* every step traced a collective */
  bool out_ok;
  double out_bad;
} dev_t;

static int failures;
#define EXPECT(c, ...)                       \
  do {                                       \
    if (!(c)) {                              \
      failures++;                            \
      fprintf(stderr, "FAIL %s: ", #c);      \
      fprintf(stderr, __VA_ARGS__);          \
      fprintf(stderr, "\n");                 \
    }                                        \
  } while (0)

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* Stands in for compute of a known length before one instruction. */
static ts_status_t hook(void *arg, int64_t step, int instr) {
  dev_t *t = arg;
  (void)step;
  if (instr != t->sleep_gindex) return TS_OK;
  t->hook_ns = now_ns();
  uint64_t ns = (uint64_t)(t->a->sleep_ms * 1e6);
  struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
  while (nanosleep(&ts, &ts) != 0) {
  }
  return TS_OK;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(const double *v, int n) {
  double s[MAX_STEPS];
  memcpy(s, v, sizeof *v * (size_t)n);
  qsort(s, (size_t)n, sizeof *s, cmp_double);
  return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

static void *device_main(void *arg) {
  dev_t *t = arg;
  ts_rt_device_opts_t o = {.device_id = t->dev, .world = t->world, .slices = t->a->slices, .trace = true,
                           .hook = hook, .hook_arg = t};
  ts_rt_device_t *d = NULL;
  t->st = ts_rt_device_create(t->p, &o, &d, &t->diag);
  if (t->st != TS_OK) {
    /* the others are in device create's splits: let them out */
    ts_coll_comm_abort(t->world, t->st);
    return NULL;
  }
  for (int i = 0; i < ts_rt_program_ninputs(t->p); i++) {
    ts_array_t *in = ts_rt_device_input(d, i);
    int64_t n = ts_array_count(in);
    for (int64_t k = 0; k < n; k++) ((float *)in->data)[k] = 1.0f;
  }
  t->any_coll = true;
  for (int s = 0; s < t->a->steps && t->st == TS_OK; s++) {
    t->hook_ns = 0;
    ts_rt_device_trace_clear(d);
    t->st = ts_rt_device_run(d, s, &t->diag);
    if (t->st != TS_OK) break;
    ts_rt_step_times_t times;
    ts_rt_device_step_times(d, &times);
    size_t n;
    const ts_rt_event_t *e = ts_rt_device_trace(d, &n);
    uint64_t first = UINT64_MAX, last = 0;
    for (size_t k = 0; k < n; k++) {
      if (!e[k].is_collective) continue;
      if (e[k].t_begin_ns < first) first = e[k].t_begin_ns;
      if (e[k].t_end_ns > last) last = e[k].t_end_ns;
    }
    t->any_coll &= last > 0;
    t->wait[s] = (double)times.collective_ns / 1e6;
    t->total[s] = (double)times.total_ns / 1e6;
    t->complete[s] = last > 0 ? (double)(last - first) / 1e6 : 0;
    t->post[s] = t->hook_ns && last > 0 ? ((double)t->hook_ns - (double)first) / 1e6 : 0;
  }
  if (t->st == TS_OK) {
    const ts_array_t *out = ts_rt_device_output(d, 0);
    double want = t->a->nexpect == 1 ? t->a->expect[0] : t->a->expect[t->dev];
    t->out_ok = true;
    for (int64_t k = 0; k < ts_array_count(out) && t->a->nexpect; k++)
      if (((const float *)out->data)[k] != (float)want) {
        t->out_ok = false;
        t->out_bad = ((const float *)out->data)[k];
        break;
      }
  }
  ts_rt_device_destroy(d);
  return NULL;
}

static int parse_args(int argc, char **argv, args_t *a) {
  static const struct option opts[] = {
      {"delay", required_argument, NULL, 'd'},        {"slices", required_argument, NULL, 's'},
      {"sleep-before", required_argument, NULL, 'b'}, {"delayed", required_argument, NULL, 'D'},
      {"min-wait", required_argument, NULL, 'w'},     {"max-wait", required_argument, NULL, 'W'},
      {"min-complete", required_argument, NULL, 'c'}, {"max-post", required_argument, NULL, 'P'},
      {"expect-out", required_argument, NULL, 'o'},   {"expect-error", required_argument, NULL, 'e'},
      {"steps", required_argument, NULL, 'k'},        {NULL, 0, NULL, 0}};
  *a = (args_t){.slices = 2, .steps = 3, .min_wait = -1, .max_wait = -1, .min_complete = -1, .max_post = -1};
  for (int d = 0; d < NDEV; d++) a->delayed[d] = true;
  int c;
  while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
    switch (c) {
    case 'd': a->delay = optarg; break;
    case 's': a->slices = atoi(optarg); break;
    case 'b': {
      char *colon = strrchr(optarg, ':');
      if (!colon) return 2;
      *colon = 0;
      a->sleep_name = optarg;
      a->sleep_ms = atof(colon + 1);
      break;
    }
    case 'D':
      for (int d = 0; d < NDEV; d++) a->delayed[d] = false;
      for (char *s = optarg; *s;) {
        long d = strtol(s, &s, 10);
        if (d < 0 || d >= NDEV) return 2;
        a->delayed[d] = true;
        if (*s == ',') s++;
      }
      break;
    case 'w': a->min_wait = atof(optarg); break;
    case 'W': a->max_wait = atof(optarg); break;
    case 'c': a->min_complete = atof(optarg); break;
    case 'P': a->max_post = atof(optarg); break;
    case 'o':
      for (char *s = optarg; *s && a->nexpect < NDEV;) {
        a->expect[a->nexpect++] = strtod(s, &s);
        if (*s == ',') s++;
      }
      break;
    case 'e': a->expect_error = optarg; break;
    case 'k': a->steps = atoi(optarg); break;
    default: return 2;
    }
  }
  if (optind + 1 != argc || a->steps < 1 || a->steps > MAX_STEPS) return 2;
  a->path = argv[optind];
  return 0;
}

int main(int argc, char **argv) {
  args_t a;
  if (parse_args(argc, argv, &a) != 0) {
    fprintf(stderr, "usage: test_xs_delay [flags] MODULE.hlo (see the header of tests/runtime/test_xs_delay.c)\n");
    return 2;
  }
  /* Before any device exists: the runtime reads it at device create. */
  if (a.delay) setenv("TESSERA_CROSS_SLICE_DELAY_US", a.delay, 1);
  else unsetenv("TESSERA_CROSS_SLICE_DELAY_US");

  int rc = 1;
  char *text = NULL;
  size_t len = 0;
  ts_diag_t diag = {0};
  ts_hlo_module_t *m = NULL;
  ts_rt_program_t *p = NULL;
  ts_coll_comm_t *comms[NDEV] = {0};
  dev_t t[NDEV];
  pthread_t th[NDEV];
  memset(t, 0, sizeof t);
  if (ts_read_file(a.path, &text, &len, &diag) != TS_OK) goto out;
  ts_source_t src = {a.path, text, len};
  ts_hlo_verify_opts_t vo = {0};
  if (ts_hlo_parse(&src, NULL, &m, &diag) != TS_OK || ts_hlo_verify(m, &vo, &diag) != TS_OK) goto out;
  if (ts_rt_program_create(m, NULL, &p, &diag) != TS_OK) goto out;
  int sleep_g = -1;
  for (int k = 0; a.sleep_name && k < ts_rt_program_ninstrs(p); k++)
    if (strcmp(ts_rt_program_instr_names(p)[k], a.sleep_name) == 0) sleep_g = k;
  if (a.sleep_name && sleep_g < 0) {
    fprintf(stderr, "no instruction %s\n", a.sleep_name);
    goto out;
  }
  if (ts_coll_comm_create_threads(NDEV, comms) != TS_OK) {
    fprintf(stderr, "cannot create the threads world\n");
    goto out;
  }
  for (int d = 0; d < NDEV; d++) {
    t[d] = (dev_t){.a = &a, .p = p, .world = comms[d], .dev = d, .sleep_gindex = sleep_g};
    pthread_create(&th[d], NULL, device_main, &t[d]);
  }
  for (int d = 0; d < NDEV; d++) pthread_join(th[d], NULL);

  if (a.expect_error) {
    for (int d = 0; d < NDEV; d++) {
      const char *msg = t[d].diag.text ? t[d].diag.text : "";
      printf("device %d: %s: %s\n", d, ts_status_string(t[d].st), msg);
      /* the device that read the bad value says why; the others may only see the abort */
      EXPECT(t[d].st != TS_OK, "device %d created despite the bad value", d);
    }
    EXPECT(t[0].diag.text && strstr(t[0].diag.text, a.expect_error), "device 0's message has '%s'", a.expect_error);
    rc = failures ? 1 : 0;
    goto out;
  }
  for (int d = 0; d < NDEV; d++) {
    dev_t *x = &t[d];
    if (x->st != TS_OK) {
      fprintf(stderr, "device %d: %s\n", d, x->diag.text ? x->diag.text : ts_status_string(x->st));
      failures++;
      continue;
    }
    for (int k = 0; k < a.steps; k++) {
      printf("device %d%s step %d: %.1f ms, collective wait %.1f ms, first post to last completion %.1f ms, post to "
             "%s %.1f ms\n",
             d, a.delay && a.delayed[d] ? " (delayed)" : "", k, x->total[k], x->wait[k], x->complete[k],
             a.sleep_name ? a.sleep_name : "-", x->post[k]);
      if (a.delayed[d] && a.min_wait >= 0)
        EXPECT(x->wait[k] >= a.min_wait, "device %d step %d waited %.1f ms", d, k, x->wait[k]);
      if (a.delayed[d] && a.min_complete >= 0)
        EXPECT(x->complete[k] >= a.min_complete, "device %d step %d completed after %.1f ms", d, k, x->complete[k]);
    }
    EXPECT(x->any_coll, "device %d traced no collective", d);
    if (a.nexpect) EXPECT(x->out_ok, "device %d: output 0 has %g", d, x->out_bad);
    double wait = median(x->wait, a.steps), post = median(x->post, a.steps);
    if ((!a.delayed[d] || a.min_wait < 0) && a.max_wait >= 0)
      EXPECT(wait <= a.max_wait, "device %d: median wait %.1f ms", d, wait);
    if (a.max_post >= 0) EXPECT(post >= 0 && post <= a.max_post, "device %d: median %.1f ms from post to the hook", d, post);
  }
  rc = failures ? 1 : 0;
  printf("%s\n", rc ? "FAILED" : "ok");
out:
  if (diag.text) fprintf(stderr, "%s\n", diag.text);
  for (int d = 0; d < NDEV; d++) {
    ts_diag_free(&t[d].diag);
    ts_coll_comm_destroy(comms[d]);
  }
  ts_rt_program_destroy(p);
  ts_hlo_module_destroy(m);
  ts_diag_free(&diag);
  ts_free(text);
  return rc;
}
