/* Fault injection for tests and rehearsals: the TESSERA_FAULT grammar, the
 * identity changes of module:/fingerprint:, and the runtime hook that
 * stalls, crashes, slows or cuts an emulated link at a given step. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hang_internal.h"
#include "ts_coll.h"
#include "ts_hlo.h"

/* ---- parsing -------------------------------------------------------------- */

static const struct {
  const char *name;
  ts_hang_fault_kind_t kind;
} kinds[] = {
    {"stall", TS_HANG_FAULT_STALL},   {"crash", TS_HANG_FAULT_CRASH},
    {"netdrop", TS_HANG_FAULT_NETDROP}, {"module", TS_HANG_FAULT_MODULE},
    {"fingerprint", TS_HANG_FAULT_FINGERPRINT}, {"input-stall", TS_HANG_FAULT_INPUT_STALL},
    {"slow", TS_HANG_FAULT_SLOW},
};

static bool parse_int(const char *s, size_t n, int64_t lo, int64_t *out) {
  if (n == 0 || n > 18) return false;
  int64_t v = 0;
  for (size_t i = 0; i < n; i++) {
    if (s[i] < '0' || s[i] > '9') return false;
    v = v * 10 + (s[i] - '0');
  }
  if (v < lo) return false;
  *out = v;
  return true;
}

static ts_status_t bad(ts_diag_t *diag, const char *spec, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static ts_status_t bad(ts_diag_t *diag, const char *spec, const char *fmt, ...) {
  char msg[160];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  ts_diag_plain(diag, "TESSERA_FAULT='%s': %s (forms: stall:rank=R|all:step=K, crash:rank=R:step=K, "
                      "netdrop:ranks=A,B:step=K, module:rank=R, fingerprint:rank=R, input-stall:rank=R:step=K, "
                      "slow:rank=R[:step=K][:seconds=S])",
                spec, msg);
  return TS_ERR_INVALID_USAGE;
}

ts_status_t ts_hang_fault_parse(const char *spec, ts_hang_fault_t *f, ts_diag_t *diag) {
  memset(f, 0, sizeof *f);
  f->rank = f->rank_b = -1;
  if (!spec || !*spec) return TS_OK;
  size_t kl = strcspn(spec, ":");
  int k = -1;
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
    if (strlen(kinds[i].name) == kl && !strncmp(spec, kinds[i].name, kl)) k = (int)i;
  if (k < 0) return bad(diag, spec, "unknown fault '%.*s'", (int)kl, spec);
  f->kind = kinds[k].kind;
  bool have_rank = false, have_step = false, have_seconds = false;
  const char *p = spec + kl;
  while (*p == ':') {
    p++;
    size_t fl = strcspn(p, ":");
    const char *eq = memchr(p, '=', fl);
    if (!eq) return bad(diag, spec, "field '%.*s' is not KEY=VALUE", (int)fl, p);
    size_t keyl = (size_t)(eq - p), vl = fl - keyl - 1;
    const char *val = eq + 1;
    int64_t v;
    if (keyl == 4 && !strncmp(p, "rank", 4) && f->kind != TS_HANG_FAULT_NETDROP) {
      if (vl == 3 && !strncmp(val, "all", 3) && f->kind == TS_HANG_FAULT_STALL)
        f->rank = -1;
      else if (parse_int(val, vl, 0, &v) && v < INT32_MAX)
        f->rank = (int32_t)v;
      else
        return bad(diag, spec, "rank wants a rank number%s, got '%.*s'",
                   f->kind == TS_HANG_FAULT_STALL ? " or all" : "", (int)vl, val);
      have_rank = true;
    } else if (keyl == 5 && !strncmp(p, "ranks", 5) && f->kind == TS_HANG_FAULT_NETDROP) {
      const char *comma = memchr(val, ',', vl);
      int64_t a, b;
      if (!comma || !parse_int(val, (size_t)(comma - val), 0, &a) ||
          !parse_int(comma + 1, vl - (size_t)(comma - val) - 1, 0, &b) || a == b || a >= INT32_MAX || b >= INT32_MAX)
        return bad(diag, spec, "ranks wants two different ranks A,B, got '%.*s'", (int)vl, val);
      f->rank = (int32_t)a;
      f->rank_b = (int32_t)b;
      have_rank = true;
    } else if (keyl == 4 && !strncmp(p, "step", 4)) {
      if (!parse_int(val, vl, 1, &v)) return bad(diag, spec, "step wants a step number from 1, got '%.*s'", (int)vl, val);
      f->step = v;
      have_step = true;
    } else if (keyl == 7 && !strncmp(p, "seconds", 7) && f->kind == TS_HANG_FAULT_SLOW) {
      char tmp[32];
      char *end;
      if (vl >= sizeof tmp) return bad(diag, spec, "seconds wants a positive number, got '%.*s'", (int)vl, val);
      memcpy(tmp, val, vl);
      tmp[vl] = '\0';
      errno = 0;
      double s = strtod(tmp, &end);
      if (errno || end == tmp || *end || !(s > 0) || s > 1e6)
        return bad(diag, spec, "seconds wants a positive number, got '%.*s'", (int)vl, val);
      f->seconds = s;
      have_seconds = true;
    } else {
      return bad(diag, spec, "unexpected field '%.*s'", (int)fl, p);
    }
    p += fl;
  }
  if (*p) return bad(diag, spec, "trailing '%s'", p);
  if (!have_rank)
    return bad(diag, spec, "%s is required", f->kind == TS_HANG_FAULT_NETDROP ? "ranks=A,B" : "rank=R");
  bool step_required = f->kind == TS_HANG_FAULT_STALL || f->kind == TS_HANG_FAULT_CRASH ||
                       f->kind == TS_HANG_FAULT_NETDROP || f->kind == TS_HANG_FAULT_INPUT_STALL;
  if (step_required && !have_step) return bad(diag, spec, "step=K is required");
  (void)have_seconds;
  return TS_OK;
}

bool ts_hang_fault_hits(const ts_hang_fault_t *f, int rank) {
  if (!f || f->kind == TS_HANG_FAULT_NONE) return false;
  if (f->kind == TS_HANG_FAULT_NETDROP) return rank == f->rank || rank == f->rank_b;
  return f->rank < 0 || f->rank == rank;
}

void ts_hang_fault_identity(const ts_hang_fault_t *f, ts_hang_progress_t *p) {
  if (!ts_hang_fault_hits(f, p->rank)) return;
  if (f->kind == TS_HANG_FAULT_MODULE) {
    size_t l = strlen(p->module_name);
    const char *suffix = ".other";
    if (l + strlen(suffix) >= sizeof p->module_name) l = sizeof p->module_name - strlen(suffix) - 1;
    memcpy(p->module_name + l, suffix, strlen(suffix) + 1);
  }
  if (f->kind == TS_HANG_FAULT_MODULE || f->kind == TS_HANG_FAULT_FINGERPRINT)
    p->fingerprint ^= UINT64_C(0x9e3779b97f4a7c15); /* any other value will do; this one is never 0 */
}

/* ---- the hook --------------------------------------------------------------- */

void ts_hang_fault_hook_init(ts_hang_fault_hook_t *h, const ts_hang_fault_t *f, int rank, ts_hang_progress_t *p) {
  memset(h, 0, sizeof *h);
  if (f) h->fault = *f;
  h->rank = rank;
  h->progress = p;
}

static bool is_collective_opcode(ts_opcode_t op) {
  static const char *const names[] = {"all-reduce",         "all-reduce-start",       "all-gather",
                                      "all-gather-start",   "reduce-scatter",         "all-to-all",
                                      "ragged-all-to-all",  "collective-permute",     "collective-permute-start",
                                      "collective-broadcast", "send",                 "recv"};
  const char *s = ts_opcode_name(op);
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (!strcmp(s, names[i])) return true;
  return false;
}

/* fused[c]: whether a fusion calls computation c. Its instructions run
 * inside the fusion's kernel (a compiled one never steps through them), not
 * as steps of their own. */
static void mark_fused(const ts_hlo_module_t *m, bool *fused) {
  for (int k = 0; k < m->ncomps; k++)
    for (int j = 0; j < m->comps[k]->ninstrs; j++) {
      const ts_hlo_instr_t *i = m->comps[k]->instrs[j];
      if (i->op != TS_OP_FUSION || i->ncalled == 0) continue;
      for (int c = 0; c < m->ncomps; c++)
        if (m->comps[c] == i->called[0]) fused[c] = true;
    }
}

ts_status_t ts_hang_fault_hook_mark(ts_hang_fault_hook_t *h, const void *module, const char *const *names, int n) {
  const ts_hlo_module_t *m = module;
  if (!m || !names || n <= 0) return TS_ERR_INVALID_ARGUMENT;
  bool *is = ts_calloc((size_t)n, sizeof *is), *fused = ts_calloc((size_t)m->ncomps + 1, sizeof *fused);
  if (!is || !fused) {
    ts_free(is);
    ts_free(fused);
    return TS_ERR_NOMEM;
  }
  mark_fused(m, fused);
  h->stepped = 0;
  for (int i = 0; i < n; i++) {
    if (!names[i]) continue;
    for (int c = 0; c < m->ncomps; c++) {
      const ts_hlo_instr_t *ins = ts_hlo_comp_find_instr(m->comps[c], names[i]);
      if (ins) {
        is[i] = is_collective_opcode(ins->op);
        if (!fused[c]) h->stepped++;
        break;
      }
    }
  }
  ts_free(fused);
  ts_free((void *)h->is_collective);
  h->is_collective = is;
  h->ninstrs = n;
  return TS_OK;
}

void ts_hang_fault_hook_fini(ts_hang_fault_hook_t *h) {
  ts_free((void *)h->is_collective);
  h->is_collective = NULL;
}

void ts_hang_fault_hook_abort(ts_hang_fault_hook_t *h) { atomic_store(&h->aborted, 1); }

static void nap(double s) {
  struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

/* Sleeps in the given activity until aborted. */
static ts_status_t wait_aborted(ts_hang_fault_hook_t *h, int activity, int instr, int waiting_on) {
  ts_hang_progress_t *p = h->progress;
  if (p) {
    if (instr >= 0) atomic_store_explicit(&p->instr, instr, memory_order_relaxed);
    atomic_store_explicit(&p->waiting_on1, waiting_on + 1, memory_order_relaxed);
    atomic_store_explicit(&p->activity, activity, memory_order_relaxed);
  }
  h->t_fired = ts_coll_now();
  while (!atomic_load(&h->aborted)) nap(0.01);
  if (p) atomic_store_explicit(&p->waiting_on1, 0, memory_order_relaxed);
  return TS_ERR_REMOTE;
}

static bool collective_here(const ts_hang_fault_hook_t *h, int instr) {
  if (!h->is_collective) return true; /* unknown: the first instruction will do */
  return instr >= 0 && instr < h->ninstrs && h->is_collective[instr];
}

ts_status_t ts_hang_fault_hook(void *arg, int64_t step, int instr) {
  ts_hang_fault_hook_t *h = arg;
  if (atomic_load(&h->aborted)) return TS_ERR_REMOTE;
  if (step != h->cur_step) {
    h->calls_prev_step = h->calls_this_step;
    h->calls_this_step = 0;
    h->cur_step = step;
  }
  h->calls_this_step++;
  const ts_hang_fault_t *f = &h->fault;
  if (!ts_hang_fault_hits(f, h->rank)) return TS_OK;
  bool at_step = step == f->step;
  switch (f->kind) {
  case TS_HANG_FAULT_STALL:
    if (step >= f->step) return wait_aborted(h, TS_HANG_COMPUTE, instr, -1);
    return TS_OK;
  case TS_HANG_FAULT_CRASH:
    if (step >= f->step) {
      fprintf(stderr, "TESSERA_FAULT: rank %d crashes at step %lld\n", h->rank, (long long)step);
      fflush(stderr);
      raise(SIGKILL);
    }
    return TS_OK;
  case TS_HANG_FAULT_NETDROP:
    if (step >= f->step && (step > f->step || collective_here(h, instr) || h->fired))
      return h->fired = true, wait_aborted(h, TS_HANG_COLLECTIVE, instr, h->rank == f->rank ? f->rank_b : f->rank);
    return TS_OK;
  case TS_HANG_FAULT_MODULE:
  case TS_HANG_FAULT_FINGERPRINT:
    if (step >= (f->step ? f->step : 1) && collective_here(h, instr))
      return wait_aborted(h, TS_HANG_COLLECTIVE, instr, -1);
    return TS_OK;
  case TS_HANG_FAULT_SLOW: {
    if (f->step && !at_step) return TS_OK;
    double per_op = TS_HANG_SLOW_OP_S;
    if (f->seconds > 0) {
      int ops = h->calls_prev_step > 0 ? h->calls_prev_step
                : h->stepped > 0         ? h->stepped
                : h->progress && h->progress->ninstrs > 0 ? h->progress->ninstrs
                                                           : 1;
      per_op = f->seconds / ops;
    }
    if (h->progress) {
      atomic_store_explicit(&h->progress->instr, instr, memory_order_relaxed);
      atomic_store_explicit(&h->progress->activity, TS_HANG_COMPUTE, memory_order_relaxed);
    }
    /* Sleep in slices so an abort is seen promptly. */
    for (double left = per_op; left > 0 && !atomic_load(&h->aborted); left -= 0.01) nap(left < 0.01 ? left : 0.01);
    return atomic_load(&h->aborted) ? TS_ERR_REMOTE : TS_OK;
  }
  default: return TS_OK;
  }
}

ts_status_t ts_hang_fault_before_input(ts_hang_fault_hook_t *h, int64_t step) {
  if (!h || atomic_load(&h->aborted)) return h ? TS_ERR_REMOTE : TS_OK;
  const ts_hang_fault_t *f = &h->fault;
  if (f->kind != TS_HANG_FAULT_INPUT_STALL || !ts_hang_fault_hits(f, h->rank) || step < f->step) return TS_OK;
  if (h->progress) atomic_store_explicit(&h->progress->step, step, memory_order_relaxed);
  return wait_aborted(h, TS_HANG_INPUT_WAIT, -1, -1);
}
