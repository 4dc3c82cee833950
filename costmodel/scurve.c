/* The S-curve analytical model for collectives across slices (DCN): XLA's
 * SolGPUCostModel (reference §1.2-1.4), its option string and its platform
 * defaults. */
#include "costmodel_internal.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* kDefaultNcclCostModelCoeff: XLA scales every raw platform value by it and
 * keeps the product as a float. */
#define XLA_COEFF(raw) ((double)(float)((raw) * 0.45))

static const double HEADER_OVERHEAD = 0.025;     /* kHeaderOverhead */
static const int64_t DEFAULT_CHUNK = 4194304;    /* kDefaultNcclCostModelChunkSizeBytes */

ts_status_t ts_scurve_preset(const char *name, ts_scurve_config_t *out) {
  ts_scurve_config_t c = {
      .nccl_op_launch_us = XLA_COEFF(100),
      .gpus_per_node = 8,
      .chunk_size_bytes = DEFAULT_CHUNK,
      .partition_size = 0,
  };
  if (strcmp(name, "h100") == 0) { /* "NVIDIA H100 80GB HBM3" */
    c.nic_speed_gbps = XLA_COEFF(55.56);
    c.chunk_prep_us = XLA_COEFF(13.34);
    c.rtt_us = XLA_COEFF(68.89);
  } else if (strcmp(name, "b200") == 0) { /* "NVIDIA B200" */
    c.nic_speed_gbps = XLA_COEFF(111.12);
    c.chunk_prep_us = XLA_COEFF(4.45);
    c.rtt_us = XLA_COEFF(46.67);
  } else if (strcmp(name, "unknown") == 0) { /* XLA's fallback: B200's NIC, H100's prep and RTT */
    c.nic_speed_gbps = XLA_COEFF(111.12);
    c.chunk_prep_us = XLA_COEFF(13.34);
    c.rtt_us = XLA_COEFF(68.89);
  } else {
    return TS_ERR_INVALID_ARGUMENT;
  }
  *out = c;
  return TS_OK;
}

/* ---- option string --------------------------------------------------------- */

typedef enum { OPT_INT, OPT_NUMBER } opt_type_t;

static const struct {
  const char *key;
  opt_type_t type;
  size_t offset;
} options[] = {
    {"nccl_op_launch_us", OPT_INT, offsetof(ts_scurve_config_t, nccl_op_launch_us)},
    {"nic_speed_gbps", OPT_NUMBER, offsetof(ts_scurve_config_t, nic_speed_gbps)},
    {"chunk_prep_us", OPT_INT, offsetof(ts_scurve_config_t, chunk_prep_us)},
    {"rtt_us", OPT_INT, offsetof(ts_scurve_config_t, rtt_us)},
    {"gpus_per_node", OPT_INT, offsetof(ts_scurve_config_t, gpus_per_node)},
    {"chunk_size_bytes", OPT_INT, offsetof(ts_scurve_config_t, chunk_size_bytes)},
    {"partition_size", OPT_INT, offsetof(ts_scurve_config_t, partition_size)},
};
#define NOPTIONS (sizeof options / sizeof options[0])

/* The *_us keys are durations in double fields; the rest are int64 fields. */
static bool is_double_field(size_t offset) {
  return offset == offsetof(ts_scurve_config_t, nccl_op_launch_us) ||
         offset == offsetof(ts_scurve_config_t, nic_speed_gbps) ||
         offset == offsetof(ts_scurve_config_t, chunk_prep_us) || offset == offsetof(ts_scurve_config_t, rtt_us);
}

ts_status_t ts_scurve_parse_options(const char *opts, ts_scurve_config_t *cfg, ts_diag_t *diag) {
  ts_scurve_config_t c = *cfg;
  const char *s = opts ? opts : "";
  while (*s) {
    const char *end = strchr(s, ',');
    size_t n = end ? (size_t)(end - s) : strlen(s);
    char item[256];
    if (n >= sizeof item) {
      ts_diag_plain(diag, "analytical option '%.40s...' is too long", s);
      return TS_ERR_INVALID_ARGUMENT;
    }
    memcpy(item, s, n);
    item[n] = 0;
    s += n + (end ? 1 : 0);
    char *eq = strchr(item, '=');
    if (n == 0) {
      ts_diag_plain(diag, "analytical options '%s': empty item (expected key=value,key=value)", opts);
      return TS_ERR_INVALID_ARGUMENT;
    }
    if (!eq) {
      ts_diag_plain(diag, "analytical option '%s': expected key=value", item);
      return TS_ERR_INVALID_ARGUMENT;
    }
    *eq = 0;
    const char *key = item, *val = eq + 1;
    size_t k = 0;
    while (k < NOPTIONS && strcmp(options[k].key, key) != 0) k++;
    if (k == NOPTIONS) {
      ts_diag_plain(diag,
                    "analytical option '%s=%s': unknown key '%s' (known: nccl_op_launch_us, nic_speed_gbps, "
                    "chunk_prep_us, rtt_us, gpus_per_node, chunk_size_bytes, partition_size)",
                    key, val, key);
      return TS_ERR_INVALID_ARGUMENT;
    }
    char *vend;
    errno = 0;
    if (options[k].type == OPT_NUMBER) {
      double v = strtod(val, &vend);
      if (!*val || *vend || errno || !(v > 0) || isinf(v)) {
        ts_diag_plain(diag, "analytical option '%s=%s': %s takes a positive number", key, val, key);
        return TS_ERR_INVALID_ARGUMENT;
      }
      *(double *)((char *)&c + options[k].offset) = v;
    } else {
      long long v = strtoll(val, &vend, 10);
      if (!*val || *vend || errno || v <= 0) {
        ts_diag_plain(diag, "analytical option '%s=%s': %s takes a positive integer", key, val, key);
        return TS_ERR_INVALID_ARGUMENT;
      }
      if (is_double_field(options[k].offset)) *(double *)((char *)&c + options[k].offset) = (double)v;
      else *(int64_t *)((char *)&c + options[k].offset) = v;
    }
  }
  *cfg = c;
  return TS_OK;
}

/* ---- formulas (microseconds) ---------------------------------------------- */

static double transfer_us(const ts_scurve_config_t *c, int64_t bytes) {
  long double t = (long double)bytes / ((long double)c->nic_speed_gbps * 1e9L) * 1e6L;
  return (double)(t * (1 + (long double)HEADER_OVERHEAD));
}

static double chunk_prep_us(const ts_scurve_config_t *c, int64_t bytes) {
  int64_t chunks = bytes / c->chunk_size_bytes + (bytes % c->chunk_size_bytes != 0);
  return (double)chunks * c->chunk_prep_us;
}

static double step_us(const ts_scurve_config_t *c, int64_t bytes) {
  return transfer_us(c, bytes) + chunk_prep_us(c, bytes) + c->rtt_us;
}

ts_status_t ts_scurve_gpus_per_comm(const ts_scurve_config_t *cfg, ts_coll_kind_t kind, int64_t nodes, int64_t comms,
                                    int64_t *gpus) {
  if (kind == TS_COLL_COLLECTIVE_PERMUTE) {
    *gpus = 2;
    return TS_OK;
  }
  if (comms < 1 || nodes < 1 || cfg->gpus_per_node % comms != 0) return TS_ERR_INVALID_ARGUMENT;
  *gpus = nodes * cfg->gpus_per_node / comms;
  return TS_OK;
}

ts_status_t ts_scurve_time(const ts_scurve_config_t *cfg, ts_coll_kind_t kind, int64_t bytes, int64_t gpus,
                           int64_t nodes, double *seconds) {
  if ((unsigned)kind >= TS_COST_COLL_COUNT || bytes < 0 || gpus < 2 || nodes < 1 || gpus < nodes ||
      !(cfg->nic_speed_gbps > 0) || cfg->chunk_size_bytes < 1)
    return TS_ERR_INVALID_ARGUMENT;
  int64_t g = gpus / nodes; /* NICs per communicator per node */
  double t;
  if (kind == TS_COLL_ALL_TO_ALL) {
    int64_t peers = g * (nodes - 1); /* off-node peers of one GPU */
    t = (double)peers * step_us(cfg, bytes / (gpus - 1));
  } else {
    int64_t per = kind == TS_COLL_COLLECTIVE_PERMUTE ? bytes : bytes / gpus;
    t = step_us(cfg, per) * (double)(gpus - 1) / (double)g;
    if (kind == TS_COLL_ALL_REDUCE) t *= 2; /* reduce-scatter + all-gather */
  }
  *seconds = (t + cfg->nccl_op_launch_us) * 1e-6;
  return TS_OK;
}
