/* The partitioner's options as command-line flags, named after XLA's
 * SpmdPartitionerOptions fields (underscores become dashes): shared by
 * `tessera opt --stage=partitioned` and `tessera check`. */
#include "ts_launcher.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

const char ts_partition_flags_help[] =
    "  --threshold-for-windowed-einsum-mib=N\n"
    "                        use windowed einsum (collective matmul) for dots\n"
    "                        whose operands exceed N MiB (default: XLA's)\n"
    "  --unroll-windowed-einsum[=BOOL]\n"
    "                        unroll the windowed einsum loop by two\n"
    "  --bidirectional-windowed-einsum[=BOOL]\n"
    "                        windowed einsum sending both ways around the ring\n"
    "  --conv-halo-exchange-always-on-lhs[=BOOL]\n"
    "                        convolution halo exchange on the lhs (default true)\n"
    "  --choose-faster-windowed-einsum-over-mem[=BOOL]\n"
    "                        prefer the faster windowed einsum over the one\n"
    "                        using less memory\n"
    "                        (a boolean flag alone means true; BOOL: true or false)\n"
    "  These are accepted and passed on; the partitioner does not do windowed\n"
    "  einsum or convolution halo exchange yet, so today they change nothing.\n";

static const char *flag_name(int code) {
  switch (code) {
  case TS_PFLAG_THRESHOLD: return "--threshold-for-windowed-einsum-mib";
  case TS_PFLAG_UNROLL: return "--unroll-windowed-einsum";
  case TS_PFLAG_BIDIRECTIONAL: return "--bidirectional-windowed-einsum";
  case TS_PFLAG_CONV_LHS: return "--conv-halo-exchange-always-on-lhs";
  case TS_PFLAG_FASTER: return "--choose-faster-windowed-einsum-over-mem";
  default: return "?";
  }
}

bool ts_partition_flag_parse(const char *cmd, int code, const char *arg, ts_partition_opts_t *o) {
  if (code == TS_PFLAG_THRESHOLD) {
    char *end;
    errno = 0;
    long long v = arg ? strtoll(arg, &end, 10) : -1;
    if (!arg || errno || end == arg || *end || v < 0) {
      fprintf(stderr, "tessera %s: error: %s wants a non-negative integer (MiB), got '%s'\n", cmd,
              flag_name(code), arg ? arg : "");
      return false;
    }
    o->threshold_for_windowed_einsum_mib = v;
    return true;
  }
  bool v;
  if (!arg || strcmp(arg, "true") == 0) {
    v = true;
  } else if (strcmp(arg, "false") == 0) {
    v = false;
  } else {
    fprintf(stderr, "tessera %s: error: %s wants true or false, got '%s'\n", cmd, flag_name(code), arg);
    return false;
  }
  switch (code) {
  case TS_PFLAG_UNROLL: o->unroll_windowed_einsum = v; break;
  case TS_PFLAG_BIDIRECTIONAL: o->bidirectional_windowed_einsum = v; break;
  case TS_PFLAG_CONV_LHS: o->conv_halo_exchange_always_on_lhs = v; break;
  case TS_PFLAG_FASTER: o->choose_faster_windowed_einsum_over_mem = v; break;
  default: return false;
  }
  return true;
}
