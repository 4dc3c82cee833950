/* tessera opt: print a module after a pipeline stage; --fit-scurve fits
 * the S-curve model's knobs to a measured collective table. */
#include "ts_costmodel.h"
#include "ts_hlo.h"
#include "ts_sharding.h"
#include "ts_launcher.h"
#include "ts_partitioner.h"
#include "ts_pipeline.h"
#include "ts_scheduler.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The stages tessera opt prints, from the pipeline's table. */
#define DEFAULT_STAGE TS_STAGE_VERIFIED

/* "--stage=STAGE" and every printable stage's clause, wrapped greedily into
 * lines of at most 74 columns under a 24-column indent. */
static void stage_help(FILE *f) {
  ts_buf_t b = {0};
  for (int s = 0; s < TS_STAGE_COUNT; s++) {
    const ts_stage_info_t *st = &ts_pipeline_stages[s];
    if (!st->prints) continue;
    ts_buf_printf(&b, "%s%s%s: %s", b.len ? "; " : "", st->name, s == DEFAULT_STAGE ? " (default)" : "", st->doc);
  }
  fputs("  --stage=STAGE         ", f);
  int col = 24;
  bool first = true;
  for (char *w = b.data; w && *w;) {
    size_t n = strcspn(w, " ");
    if (!first && col + 1 + (int)n > 74) {
      fputs("\n                        ", f);
      col = 24;
      first = true;
    }
    fprintf(f, "%s%.*s", first ? "" : " ", (int)n, w);
    col += (first ? 0 : 1) + (int)n;
    first = false;
    w += n;
    w += strspn(w, " ");
  }
  fputc('\n', f);
  ts_buf_free(&b);
}

/* "parsed, verified, ..." */
static void stage_list(ts_buf_t *b) {
  for (int s = 0; s < TS_STAGE_COUNT; s++)
    if (ts_pipeline_stages[s].prints) ts_buf_printf(b, "%s%s", b->len ? ", " : "", ts_pipeline_stages[s].name);
}

static void usage(FILE *f) {
  fprintf(f,
          "usage: tessera opt [--stage=STAGE] [--replica-count N] [--num-partitions N]\n"
          "                   [PARTITIONER FLAGS] [SCHEDULER FLAGS] [-o FILE] MODULE.hlo\n"
          "       tessera opt --fit-scurve TABLE[@DEVICE] [--gpus-per-node N]\n"
          "\n"
          "Parses an HLO text module (FILE may be '-' for stdin) and prints it, in\n"
          "canonical HLO text, after a pipeline stage.\n"
          "\n");
  stage_help(f);
  fprintf(f,
          "  --replica-count N     override the module's replica_count\n"
          "  --num-partitions N    override the module's num_partitions\n"
          "  -o, --output FILE     write the module to FILE instead of stdout\n"
          "  -h, --help            this help\n"
          "partitioner flags (--stage=partitioned; named after XLA's SpmdPartitionerOptions):\n"
          "%s"
          "scheduler flags (--stage=scheduled):\n"
          "  --cost-model=SPEC     analytical[:OPTIONS] (the S-curve model for collectives\n"
          "                        across slices; OPTIONS in XLA's syntax, e.g.\n"
          "                        nic_speed_gbps=25,gpus_per_node=8,rtt_us=31) or\n"
          "                        table:PATH[,PATH...] (XLA perf tables, collectives\n"
          "                        and GEMMs; PATH@DEVICE picks a device); repeat the\n"
          "                        flag or separate specs with ';' to combine: tables\n"
          "                        answer first, the analytical model next, the\n"
          "                        preset's roofline for the rest\n"
          "  --cost-model-preset=P h100, b200 or host (default host): the S-curve\n"
          "                        defaults, the table device and the roofline\n"
          "  --overlap-limit=N     async collectives of one kind in flight at once\n"
          "                        (default 1); or KIND=N,... (all-reduce, all-gather,\n"
          "                        reduce-scatter, all-to-all, collective-permute,\n"
          "                        collective-broadcast)\n"
          "  --memory-limit=BYTES  bytes live at once per device (K, M, G, T suffixes):\n"
          "                        prefer freeing memory and reschedule under pressure\n"
          "                        (default: program order's peak, never above it)\n"
          "  --no-partition        the module is already the per-device program:\n"
          "                        schedule it as it is\n"
          "  --stats FILE          write the statistics to FILE instead of stderr\n"
          "  --trace FILE.json     write the predicted timeline as a Chrome trace\n"
          "  --fit-scurve TABLE    fit the S-curve knobs to a measured collective table\n"
          "                        (least squares) and print them as an option string\n"
          "  --gpus-per-node N     devices per node for --fit-scurve (default 1: every\n"
          "                        device its own node)\n",
          ts_partition_flags_help);
}

enum {
  F_STATS = 0x200,
  F_TRACE,
  F_FIT,
  F_GPN,
  F_NO_PARTITION,
};

/* BYTES with an optional K/M/G/T suffix (powers of 1024). */
/* --fit-scurve TABLE[@DEVICE]: prints the option string on stdout, the fit
 * on stderr. */
static int fit_scurve(const char *arg, const char *preset, int64_t gpn) {
  ts_diag_t diag = {0};
  ts_perf_table_t *t = NULL;
  ts_coll_measurement_t *ms = NULL;
  size_t n = 0;
  ts_buf_t out = {0};
  char *path = ts_strdup(arg), host[256];
  ts_status_t st = path ? TS_OK : TS_ERR_NOMEM;
  const char *device = NULL;
  if (st != TS_OK) goto done;
  char *at = strrchr(path, '@');
  if (at && !strchr(at, '/')) {
    *at = 0;
    device = at + 1;
  }
  TS_CHECK_GOTO(ts_perf_table_load(path, &t, &diag), st, done);
  if (ts_perf_table_kind(t) != TS_PERF_TABLE_COLLECTIVES) {
    ts_diag_plain(&diag, "%s: a GEMM table; --fit-scurve wants collective measurements", path);
    st = TS_ERR_INVALID_ARGUMENT;
    goto done;
  }
  if (!device && preset) {
    if (strcmp(preset, "h100") == 0) device = "sm_90";
    else if (strcmp(preset, "b200") == 0) device = "sm_100_B200";
    else if (strcmp(preset, "host") == 0) ts_costmodel_host_device_key(host, sizeof host), device = host;
  }
  if (!device) {
    if (ts_perf_table_num_devices(t) != 1) {
      ts_diag_plain(&diag, "%s: the table has %zu devices: choose one with TABLE@DEVICE or --cost-model-preset", path,
                    ts_perf_table_num_devices(t));
      st = TS_ERR_INVALID_ARGUMENT;
      goto done;
    }
    device = ts_perf_table_device(t, 0);
  }
  TS_CHECK_GOTO(ts_perf_table_collectives(t, device, &ms, &n, &diag), st, done);
  ts_scurve_fit_t fit;
  TS_CHECK_GOTO(ts_scurve_fit(ms, n, gpn, &fit, &diag), st, done);
  ts_scurve_print_options(&fit.cfg, &out);
  ts_buf_putc(&out, '\n');
  fprintf(stderr, "fit of %zu measurements of '%s': rms error %.2f%%, max %.2f%%\n", fit.points, device,
          fit.rms_rel_error, fit.max_rel_error);
  st = ts_cli_write_output(NULL, out.data, out.len, &diag);
done:
  if (st < 0) {
    if (diag.text) fputs(diag.text, stderr);
    else fprintf(stderr, "tessera opt: error: %s\n", ts_status_string(st));
  }
  ts_free(ms);
  ts_perf_table_destroy(t);
  ts_buf_free(&out);
  ts_free(path);
  ts_diag_free(&diag);
  return ts_status_exit_code(st);
}

/* Appends one --cost-model value to the ';'-separated list. */
static bool add_cost_spec(ts_buf_t *specs, const char *s) {
  if (!*s) {
    fprintf(stderr, "tessera opt: error: --cost-model wants analytical[:OPTIONS] or table:PATH[,PATH...]\n");
    return false;
  }
  if (specs->len) ts_buf_putc(specs, ';');
  ts_buf_puts(specs, s);
  return true;
}

int ts_cmd_opt(int argc, char **argv) {
  static const struct option opts[] = {
      {"stage", required_argument, NULL, 's'},
      {"replica-count", required_argument, NULL, 'r'},
      {"num-partitions", required_argument, NULL, 'p'},
      {"output", required_argument, NULL, 'o'},
      {"help", no_argument, NULL, 'h'},
      TS_SCHED_FLAG_OPTIONS,
      {"stats", required_argument, NULL, F_STATS},
      {"trace", required_argument, NULL, F_TRACE},
      {"fit-scurve", required_argument, NULL, F_FIT},
      {"gpus-per-node", required_argument, NULL, F_GPN},
      {"no-partition", no_argument, NULL, F_NO_PARTITION},
      TS_PARTITION_FLAG_OPTIONS,
      {NULL, 0, NULL, 0},
  };
  const char *stage = "verified", *output = NULL;
  ts_hlo_verify_opts_t vopts = {0};
  ts_partition_opts_t popts;
  ts_partition_opts_default(&popts);
  ts_sched_opts_t sopts;
  ts_sched_opts_default(&sopts);
  ts_buf_t specs = {0};
  const char *preset = NULL, *stats_path = NULL, *trace_path = NULL, *fit = NULL;
  int64_t gpn = 1;
  bool no_partition = false, sched_flags = false;
  int c;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":o:h", opts, NULL)) != -1) {
    switch (c) {
    case 's': stage = optarg; break;
    case 'r':
      if (!ts_cli_parse_count("opt", "--replica-count", optarg, &vopts.replica_count)) goto usage_error;
      break;
    case 'p':
      if (!ts_cli_parse_count("opt", "--num-partitions", optarg, &vopts.num_partitions)) goto usage_error;
      break;
    case 'o': output = optarg; break;
    case 'h': usage(stdout); ts_buf_free(&specs); return 0;
    case TS_SFLAG_COST_MODEL:
      sched_flags = true;
      if (!add_cost_spec(&specs, optarg)) goto usage_error;
      break;
    case TS_SFLAG_PRESET: sched_flags = true; preset = optarg; break;
    case TS_SFLAG_OVERLAP:
    case TS_SFLAG_MEMORY:
      sched_flags = true;
      if (!ts_sched_flag_parse("opt", c, optarg, &sopts)) goto usage_error;
      break;
    case F_STATS: sched_flags = true; stats_path = optarg; break;
    case F_TRACE: sched_flags = true; trace_path = optarg; break;
    case F_FIT: fit = optarg; break;
    case F_GPN:
      if (!ts_cli_parse_count("opt", "--gpus-per-node", optarg, &gpn)) goto usage_error;
      break;
    case F_NO_PARTITION: sched_flags = true; no_partition = true; break;
    case ':':
    case '?': ts_cli_getopt_error("opt", c, argv[optind - 1], usage); goto usage_error;
    default:
      if (!ts_partition_flag_parse("opt", c, optarg, &popts)) goto usage_error;
      break;
    }
  }
  if (fit) {
    ts_buf_free(&specs);
    if (optind != argc) {
      fprintf(stderr, "tessera opt: error: --fit-scurve takes a table, not a module file\n");
      return 2;
    }
    if (preset && strcmp(preset, "h100") && strcmp(preset, "b200") && strcmp(preset, "host")) {
      fprintf(stderr, "tessera opt: error: --cost-model-preset '%s' is not one of h100, b200, host\n", preset);
      return 2;
    }
    return fit_scurve(fit, preset, gpn);
  }
  ts_stage_t target;
  if (!ts_pipeline_stage_from_name(stage, &target) || !ts_pipeline_stages[target].prints) {
    ts_buf_t names = {0};
    stage_list(&names);
    fprintf(stderr, "tessera opt: error: unknown stage '%s' (stages: %s)\n", stage, names.data);
    ts_buf_free(&names);
    goto usage_error;
  }
  bool scheduled = target == TS_STAGE_SCHEDULED;
  if (sched_flags && !scheduled) {
    fprintf(stderr, "tessera opt: error: scheduler flags (--cost-model, --stats, ...) need --stage=scheduled\n");
    goto usage_error;
  }
  if (optind != argc - 1) {
    fprintf(stderr, "tessera opt: error: %s\n",
            optind >= argc ? "no module file given" : "more than one module file given");
    usage(stderr);
    goto usage_error;
  }

  ts_diag_t diag = {0};
  ts_pipeline_t p;
  ts_pipeline_init(&p, &(ts_pipeline_opts_t){.purpose = TS_PIPELINE_PRINT, .path = argv[optind], .verify = vopts,
                                             .partition = popts, .sched = sopts});
  ts_costmodel_t *cm = NULL;
  ts_buf_t out = {0}, stats = {0}, trace = {0};
  bool reported = false;
  ts_status_t st;
  /* partitioned and scheduled print the per-device program; the others the module as written */
  bool per_device = target == TS_STAGE_PARTITIONED || target == TS_STAGE_SCHEDULED;
  TS_CHECK_GOTO(ts_pipeline_run_to(&p, per_device ? TS_STAGE_VERIFIED : target, &diag), st, done);
  if (scheduled) /* flags first: a bad cost model fails before any work */
    TS_CHECK_GOTO(ts_costmodel_parse_spec(specs.len ? specs.data : NULL, preset ? preset : "host", &cm, &diag), st,
                  done);
  if (per_device) {
    if (no_partition) {
      ts_pipeline_skip(&p, TS_STAGE_PARTITIONED);
    } else {
      p.o.partition.num_partitions = vopts.num_partitions ? vopts.num_partitions : p.m->num_partitions;
      if (p.o.partition.num_partitions < 1 || (p.o.partition.num_partitions == 1 && !vopts.num_partitions)) {
        fprintf(stderr, "tessera opt: error: --stage=%s: say how many devices with --num-partitions N "
                        "(the module's header gives none)\n", stage);
        st = TS_ERR_INVALID_USAGE;
        reported = true;
        goto done;
      }
    }
    p.o.sched.cost = cm;
    TS_CHECK_GOTO(ts_pipeline_run_to(&p, target, &diag), st, done);
  }
  if (scheduled) {
    ts_sched_result_print(p.sched, &stats);
    if (trace_path) TS_CHECK_GOTO(ts_sched_trace_json(p.sched, &trace), st, done);
  }
  TS_CHECK_GOTO(ts_hlo_print(per_device ? p.pm : p.m, &out), st, done);
  /* Side files first: the module is the last thing written. */
  if (trace_path) TS_CHECK_GOTO(ts_write_file_atomic(trace_path, trace.data, trace.len, &diag), st, done);
  if (stats_path) TS_CHECK_GOTO(ts_write_file_atomic(stats_path, stats.data, stats.len, &diag), st, done);
  else if (stats.len) fputs(stats.data, stderr);
  st = ts_cli_write_output(output, out.data, out.len, &diag);

done:
  if (st < 0 && !reported) {
    if (diag.text)
      fputs(diag.text, stderr);
    else
      fprintf(stderr, "tessera opt: error: %s\n", ts_status_string(st));
  }
  ts_buf_free(&out);
  ts_buf_free(&stats);
  ts_buf_free(&trace);
  ts_buf_free(&specs);
  ts_pipeline_fini(&p);
  ts_costmodel_destroy(cm);
  ts_diag_free(&diag);
  return ts_pipeline_exit_code(st);

usage_error:
  ts_buf_free(&specs);
  return 2;
}
