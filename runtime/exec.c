/* The executor: one device's buffers (inputs and one arena per computation,
 * allocated and first-touched once at create), and the run loop over the
 * compiled steps: kernels over assigned buffers, control flow, collectives
 * posted at their start and finished at their done, progress records for the
 * hang detector, trace events and the per-step time split. No allocation
 * on the hot path (the trace array grows until its steady size). */
#include "rt_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ts_rt_device {
  const ts_rt_program_t *p;
  ts_rt_device_opts_t opts;
  rt_device_colls_t *colls;
  void *mem;                  /* inputs + arenas, one block */
  size_t mem_bytes;
  void ***bufdata;            /* per computation: buffer -> data */
  ts_array_t **views;         /* per computation: every step's in views, then its out views */
  size_t **view_off;          /* per computation: step -> first view */
  void **ptrs;                /* root pointers of called computations, a region per step */
  size_t **ptr_off;           /* per computation: step -> its region of ptrs */
  int **infl;                 /* per computation: step -> in-flight slot (collective starts), -1 */
  rt_inflight_t *inflight;
  int ninflight;
  rt_inflight_t sync_f;
  ts_array_t *inputs, *outputs;
  ts_kernel_ctx_t ctx[RT_MAX_DEPTH];
  int depth;
  ts_diag_t *diag;
  int64_t step;
  uint64_t progress;
  uint64_t kernel_ns, coll_ns, total_ns;
  ts_rt_event_t *events;
  size_t nevents, events_cap;
  const ts_hlo_comp_t *apply_comp;
  int apply_ci;
};

/* ---- progress and trace ------------------------------------------------------ */

static void set_activity(ts_rt_device_t *d, ts_hang_activity_t a, int instr) {
  ts_hang_progress_t *pr = d->opts.progress;
  if (!pr) return;
  atomic_store_explicit(&pr->activity, (int32_t)a, memory_order_relaxed);
  atomic_store_explicit(&pr->instr, instr, memory_order_relaxed);
}

static void bump(ts_rt_device_t *d, uint64_t now) {
  ts_hang_progress_t *pr = d->opts.progress;
  if (!pr) return;
  /* one writer: a plain relaxed store, no read-modify-write */
  atomic_store_explicit(&pr->progress, ++d->progress, memory_order_relaxed);
  atomic_store_explicit(&pr->t_progress_ns, now, memory_order_relaxed);
}

/* `algorithm`: a collective's (copied into the event), NULL for a kernel. */
static void trace(ts_rt_device_t *d, int instr, const char *algorithm, uint64_t t0, uint64_t t1) {
  if (!d->opts.trace) return;
  if (d->nevents == d->events_cap) {
    size_t cap = d->events_cap ? d->events_cap * 2 : 1024;
    ts_rt_event_t *e = ts_realloc(d->events, cap * sizeof *e);
    if (!e) return; /* the trace is best effort: drop the event */
    d->events = e;
    d->events_cap = cap;
  }
  ts_rt_event_t *e = &d->events[d->nevents++];
  *e = (ts_rt_event_t){
      .instr = instr, .is_collective = algorithm != NULL, .step = d->step, .t_begin_ns = t0, .t_end_ns = t1};
  if (algorithm) snprintf(e->algorithm, sizeof e->algorithm, "%s", algorithm);
}

/* ---- running ------------------------------------------------------------------- */

static ts_status_t run_comp(ts_rt_device_t *d, int ci, const ts_array_t *args, bool entry);

static ts_status_t coll_error(ts_rt_device_t *d, const ts_hlo_instr_t *i, ts_status_t st) {
  if (d->diag && !d->diag->text)
    ts_kernel_fail(&d->ctx[0], i, st, "collective failed: %s%s", ts_status_string(st),
                   st == TS_ERR_REMOTE ? " (a peer failed or aborted the job)" : "");
  return st;
}

/* Waits for collective f and traces it as instruction `traced` (its start);
 * meanwhile the hang detector sees instruction `active` in a collective. */
static ts_status_t finish_coll(ts_rt_device_t *d, rt_inflight_t *f, bool timed, int active, int traced,
                               const ts_hlo_instr_t *instr) {
  uint64_t tw = rt_now_ns();
  if (timed) set_activity(d, TS_HANG_COLLECTIVE, active);
  const char *algo = ""; /* looked up only for the trace */
  ts_status_t st = rt_coll_finish(d->colls, d->p, f, d->opts.trace ? &algo : NULL);
  uint64_t t1 = rt_now_ns();
  if (timed) d->coll_ns += t1 - tw;
  /* collectives at any depth (a training loop's all-reduce is in a while) */
  trace(d, traced, algo, f->t_post, t1);
  return st != TS_OK ? coll_error(d, instr, st) : TS_OK;
}

/* Copies `n` leaves from src pointers into dst views (skips equal pointers). */
static void copy_leaves(ts_array_t *dst, void *const *src, int n) {
  for (int k = 0; k < n; k++)
    if (dst[k].data != src[k]) memcpy(dst[k].data, src[k], ts_array_bytes(&dst[k]));
}

/* The root leaves of computation ci after a run (pointers). */
static void root_ptrs(ts_rt_device_t *d, int ci, void **out) {
  const rt_comp_t *rc = &d->p->comps[ci];
  for (int j = 0; j < rc->nroot; j++) out[j] = d->bufdata[ci][rc->slot_buf[rc->root_slot + j]];
}

static ts_status_t run_while(ts_rt_device_t *d, const rt_step_t *s, ts_array_t *in, ts_array_t *out, void **roots) {
  const ts_rt_program_t *p = d->p;
  int cond = s->callee[0], body = s->callee[1];
  const rt_comp_t *bc = &p->comps[body];
  for (int k = 0; k < s->nout; k++) memcpy(out[k].data, in[k].data, ts_array_bytes(&out[k]));
  for (;;) {
    TS_CHECK(run_comp(d, cond, out, false));
    void *pr;
    root_ptrs(d, cond, &pr);
    const ts_shape_t *ps = p->comps[cond].slot_shape[p->comps[cond].root_slot];
    if (!ts_load_i(ps->elem, pr, 0)) break;
    TS_CHECK(run_comp(d, body, out, false));
    root_ptrs(d, body, roots);
    if (bc->nroot != s->nout) return TS_ERR_INTERNAL;
    /* leaves that are other parameter leaves go through their stage first */
    for (int j = 0; j < bc->nroot; j++)
      if (bc->stage_buf[j] >= 0) {
        void *sb = d->bufdata[body][bc->stage_buf[j]];
        memcpy(sb, roots[j], ts_array_bytes(&out[j]));
        roots[j] = sb;
      }
    copy_leaves(out, roots, s->nout);
  }
  return TS_OK;
}

/* Fills the data pointers of a step's views from the computation's buffers. */
static inline void bind(const rt_comp_t *rc, void **bd, const int *slots, int n, ts_array_t *v) {
  for (int k = 0; k < n; k++) v[k].data = bd[rc->slot_buf[slots[k]]];
}

static ts_status_t run_step(ts_rt_device_t *d, int ci, int si, bool entry) {
  const ts_rt_program_t *p = d->p;
  const rt_comp_t *rc = &p->comps[ci];
  const rt_step_t *s = &rc->steps[si];
  void **bd = d->bufdata[ci];
  ts_array_t *in = d->views[ci] + d->view_off[ci][si], *out = in + s->nin;
  ts_kernel_ctx_t *ctx = &d->ctx[d->depth];
  bool timed = d->depth == 0;
  uint64_t t0 = timed ? rt_now_ns() : 0;
  ts_status_t st = TS_OK;
  bind(rc, bd, s->in, s->nin, in);
  bind(rc, bd, s->out, s->nout, out);
  if (timed) set_activity(d, TS_HANG_COMPUTE, s->gindex);
  switch (s->kind) {
  case ST_NOP: break;
  case ST_KERNEL:
    st = s->fn(ctx, s->instr, in, s->nin, out, s->nout);
    if (timed) {
      uint64_t t1 = rt_now_ns();
      d->kernel_ns += t1 - t0;
      trace(d, s->gindex, NULL, t0, t1);
    }
    break;
  case ST_ID: {
    int64_t P = p->partitions, dev = d->opts.device_id;
    ts_store_i(out[0].elem, out[0].data, 0, s->instr->op == TS_OP_PARTITION_ID ? dev % P : dev / P);
    break;
  }
  case ST_ZERO:
    for (int k = 0; k < s->nout; k++) memset(out[k].data, 0, ts_array_bytes(&out[k]));
    break;
  case ST_COPY_START:
    memcpy(out[0].data, in[0].data, ts_array_bytes(&out[0]));
    for (int k = s->zero_from; k < s->nout; k++) memset(out[k].data, 0, ts_array_bytes(&out[k]));
    break;
  case ST_CALL: {
    int callee = s->callee[0];
    void **roots = d->ptrs + d->ptr_off[ci][si];
    const rt_comp_t *cc = &p->comps[callee];
    if (cc->nroot != s->zero_from)
      return ts_kernel_fail(ctx, s->instr, TS_ERR_UNSUPPORTED, "called computation with %d result leaves", cc->nroot);
    st = run_comp(d, callee, in, false);
    if (st != TS_OK) break;
    root_ptrs(d, callee, roots);
    copy_leaves(out, roots, s->zero_from);
    for (int k = s->zero_from; k < s->nout; k++) memset(out[k].data, 0, ts_array_bytes(&out[k]));
    break;
  }
  case ST_WHILE:
    st = run_while(d, s, in, out, d->ptrs + d->ptr_off[ci][si]);
    break;
  case ST_COND: {
    int64_t x = ts_load_i(in[0].elem, in[0].data, 0);
    int nb = s->ncallee, b;
    if (s->instr->ops[0]->shape->elem == TS_PRED) b = x ? 0 : 1;
    else b = x < 0 || x >= nb ? nb - 1 : (int)x; /* out of range: the last branch */
    const rt_comp_t *cc = &p->comps[s->callee[b]];
    void **stackp = d->ptrs + d->ptr_off[ci][si];
    if (cc->nroot != s->nout)
      return ts_kernel_fail(ctx, s->instr, TS_ERR_UNSUPPORTED, "branch with %d result leaves", cc->nroot);
    st = run_comp(d, s->callee[b], in + s->branch_arg[b], false);
    if (st != TS_OK) break;
    root_ptrs(d, s->callee[b], stackp);
    copy_leaves(out, stackp, s->nout);
    break;
  }
  case ST_COLL:
  case ST_COLL_START: {
    bool sync = s->kind == ST_COLL;
    rt_inflight_t *f = sync ? &d->sync_f : &d->inflight[d->infl[ci][si]];
    for (int k = s->zero_from; k < s->nout; k++) memset(out[k].data, 0, ts_array_bytes(&out[k]));
    st = rt_coll_post(d->colls, p, s->coll, in, out, s->zero_from, f);
    if (st != TS_OK) return coll_error(d, s->instr, st);
    if (!sync) break;
    /* a synchronous collective finishes at once */
    st = finish_coll(d, f, timed, s->gindex, s->gindex, s->instr);
    if (st != TS_OK) return st;
    break;
  }
  case ST_COLL_DONE: {
    rt_inflight_t *f = &d->inflight[d->infl[ci][s->start]];
    st = finish_coll(d, f, timed, s->gindex, rc->steps[s->start].gindex, s->instr);
    if (st != TS_OK) return st;
    break;
  }
  }
  if (timed) bump(d, rt_now_ns());
  (void)entry;
  return st;
}

static ts_status_t run_comp(ts_rt_device_t *d, int ci, const ts_array_t *args, bool entry) {
  const rt_comp_t *rc = &d->p->comps[ci];
  void **bd = d->bufdata[ci];
  if (!entry)
    for (int j = 0; j < rc->nparam_leaves; j++) bd[rc->param_buf[j]] = args[j].data;
  for (int si = 0; si < rc->nsteps; si++) {
    if (entry && d->opts.hook) {
      ts_status_t st = d->opts.hook(d->opts.hook_arg, d->step, rc->steps[si].gindex);
      if (st != TS_OK) {
        if (d->diag && !d->diag->text)
          ts_kernel_fail(&d->ctx[0], rc->steps[si].instr, st, "stopped by the fault hook before this instruction: %s",
                         ts_status_string(st));
        return st;
      }
    }
    TS_CHECK(run_step(d, ci, si, entry));
  }
  return TS_OK;
}

/* ctx->apply: a called computation (reducer, comparator, map, scatter
 * combiner) over the kernel's scalars, through this device's compiled copy. */
static ts_status_t apply(ts_kernel_ctx_t *ctx, const ts_hlo_comp_t *comp, const ts_array_t *args, int nargs,
                         ts_array_t *outs, int nouts) {
  ts_rt_device_t *d = ctx->apply_state;
  if (comp != d->apply_comp) {
    d->apply_ci = rt_comp_index(d->p, comp);
    d->apply_comp = comp;
  }
  int ci = d->apply_ci;
  if (ci < 0) return ts_kernel_fail(ctx, comp->root, TS_ERR_INTERNAL, "computation %s is not in the program", comp->name);
  const rt_comp_t *rc = &d->p->comps[ci];
  if (nargs != rc->nparam_leaves || nouts != rc->nroot)
    return ts_kernel_fail(ctx, comp->root, TS_ERR_INTERNAL, "%d arguments and %d results for %s (%d and %d)", nargs,
                          nouts, comp->name, rc->nparam_leaves, rc->nroot);
  if (d->depth + 1 >= RT_MAX_DEPTH)
    return ts_kernel_fail(ctx, comp->root, TS_ERR_INVALID_ARGUMENT, "computations applied too deeply");
  d->depth++;
  ts_status_t st = run_comp(d, ci, args, false);
  d->depth--;
  if (st != TS_OK) return st;
  for (int k = 0; k < nouts; k++) {
    const void *src = d->bufdata[ci][rc->slot_buf[rc->root_slot + k]];
    if (outs[k].data != src) memcpy(outs[k].data, src, ts_array_bytes(&outs[k]));
  }
  return TS_OK;
}

/* ---- the public interface -------------------------------------------------------- */

ts_status_t ts_rt_device_run(ts_rt_device_t *d, int64_t step, ts_diag_t *diag) {
  const ts_rt_program_t *p = d->p;
  ts_hang_progress_t *pr = d->opts.progress;
  d->step = step;
  d->diag = diag;
  d->depth = 0;
  d->kernel_ns = d->coll_ns = 0;
  for (int k = 0; k < RT_MAX_DEPTH; k++) d->ctx[k].diag = diag;
  if (pr) atomic_store_explicit(&pr->step, step, memory_order_relaxed);
  uint64_t t0 = rt_now_ns();
  ts_status_t st = run_comp(d, p->entry, NULL, true);
  if (st == TS_OK) {
    /* the step's end: inputs the copies overwrite are set aside, then the
     * aliased outputs are copied into their inputs */
    void **bd = d->bufdata[p->entry];
    const rt_comp_t *ec = &p->comps[p->entry];
    for (int k = 0; k < p->noutputs; k++)
      if (p->out_pre[k] >= 0) memcpy(bd[p->out_stage[k]], bd[p->out_pre[k]], ec->bufs[p->out_pre[k]].bytes);
    for (int k = 0; k < p->noutputs; k++)
      if (p->out_mode[k] == OUT_COPY && bd[p->out_buf[k]] != bd[p->out_src[k]])
        memcpy(bd[p->out_buf[k]], bd[p->out_src[k]], ec->bufs[p->out_src[k]].bytes);
  }
  uint64_t t1 = rt_now_ns();
  d->total_ns = t1 - t0;
  if (st != TS_OK) {
    /* peers must not wait for this device: abort the world (a timeout has
     * already), then drop whatever is still in flight */
    if (d->opts.world && st != TS_ERR_REMOTE && st != TS_ERR_TIMEOUT) ts_coll_comm_abort(d->opts.world, st);
    for (int k = 0; k < d->ninflight; k++)
      if (d->inflight[k].active) rt_coll_cancel(&d->inflight[k]);
    if (d->sync_f.active) rt_coll_cancel(&d->sync_f);
    if (pr) {
      atomic_store_explicit(&pr->error, (int32_t)st, memory_order_relaxed);
      atomic_store_explicit(&pr->activity, (int32_t)TS_HANG_FAILED, memory_order_relaxed);
    }
    return st;
  }
  if (pr) {
    atomic_store_explicit(&pr->last_step_ns, d->total_ns, memory_order_relaxed);
    atomic_store_explicit(&pr->last_compute_ns, d->kernel_ns, memory_order_relaxed);
    atomic_store_explicit(&pr->last_collective_ns, d->coll_ns, memory_order_relaxed);
    set_activity(d, TS_HANG_IDLE, -1);
  }
  return TS_OK;
}

static size_t align_up(size_t n) { return (n + RT_ALIGN - 1) / RT_ALIGN * RT_ALIGN; }

ts_status_t ts_rt_device_create(const ts_rt_program_t *p, const ts_rt_device_opts_t *opts, ts_rt_device_t **out,
                                ts_diag_t *diag) {
  *out = NULL;
  ts_rt_device_t *d = ts_calloc(1, sizeof *d);
  if (!d) return TS_ERR_NOMEM;
  d->p = p;
  d->opts = *opts;
  d->apply_ci = -1;
  ts_status_t st = TS_OK;
  TS_CHECK_GOTO(rt_coll_device_create(p, opts, &d->colls, diag), st, fail);
  int nc = p->ncomps;
  d->bufdata = ts_calloc((size_t)nc + 1, sizeof *d->bufdata);
  d->views = ts_calloc((size_t)nc + 1, sizeof *d->views);
  d->view_off = ts_calloc((size_t)nc + 1, sizeof *d->view_off);
  d->ptr_off = ts_calloc((size_t)nc + 1, sizeof *d->ptr_off);
  d->infl = ts_calloc((size_t)nc + 1, sizeof *d->infl);
  d->inputs = ts_calloc((size_t)p->ninputs + 1, sizeof *d->inputs);
  d->outputs = ts_calloc((size_t)p->noutputs + 1, sizeof *d->outputs);
  if (!d->bufdata || !d->views || !d->view_off || !d->ptr_off || !d->infl || !d->inputs || !d->outputs) goto nomem;
  /* one block: inputs, then every computation's arena */
  size_t total = 0;
  const rt_comp_t *ec = &p->comps[p->entry];
  for (int i = 0; i < p->ninputs; i++) total += align_up(ec->bufs[ec->param_buf[i]].bytes);
  for (int c = 0; c < nc; c++) total += align_up(p->comps[c].arena_bytes);
  d->mem_bytes = total;
  if (total > 0) {
    if (opts->world) {
      TS_CHECK_GOTO(ts_coll_alloc(opts->world, total, &d->mem), st, fail);
    } else {
      d->mem = ts_malloc(total + RT_ALIGN);
      if (!d->mem) goto nomem;
    }
    memset(d->mem, 0, total); /* first touch now, not in the first step */
  }
  char *base = d->mem ? (char *)(((uintptr_t)d->mem + RT_ALIGN - 1) / RT_ALIGN * RT_ALIGN) : NULL;
  if (opts->world) base = d->mem; /* page-aligned already */
  size_t at = 0;
  for (int i = 0; i < p->ninputs; i++) {
    const ts_shape_t *s = p->in_shape[i];
    d->inputs[i] = (ts_array_t){s->elem, s->rank, s->dims, base ? base + at : NULL};
    at += align_up(ec->bufs[ec->param_buf[i]].bytes);
  }
  int ninfl = 0;
  size_t nptrs = 0;
  for (int c = 0; c < nc; c++) {
    const rt_comp_t *rc = &p->comps[c];
    char *arena = base ? base + at : NULL;
    at += align_up(rc->arena_bytes);
    if (!rc->comp) continue; /* never runs (see build_reachable) */
    d->bufdata[c] = ts_calloc((size_t)rc->nbufs + 1, sizeof **d->bufdata);
    d->view_off[c] = ts_calloc((size_t)rc->nsteps + 1, sizeof **d->view_off);
    d->ptr_off[c] = ts_calloc((size_t)rc->nsteps + 1, sizeof **d->ptr_off);
    d->infl[c] = ts_calloc((size_t)rc->nsteps + 1, sizeof **d->infl);
    size_t nv = 0;
    for (int s = 0; s < rc->nsteps; s++) nv += (size_t)(rc->steps[s].nin + rc->steps[s].nout);
    d->views[c] = ts_calloc(nv + 1, sizeof **d->views);
    if (!d->bufdata[c] || !d->view_off[c] || !d->ptr_off[c] || !d->infl[c] || !d->views[c]) goto nomem;
    for (int b = 0; b < rc->nbufs; b++) {
      const rt_buf_t *bb = &rc->bufs[b];
      switch (bb->kind) {
      case BUF_ARENA: d->bufdata[c][b] = arena ? arena + bb->offset : NULL; break;
      case BUF_CONST: d->bufdata[c][b] = (void *)bb->cdata; break;
      case BUF_INPUT: d->bufdata[c][b] = d->inputs[bb->index].data; break;
      case BUF_PARAM: d->bufdata[c][b] = NULL; break;
      }
    }
    size_t vo = 0;
    for (int s = 0; s < rc->nsteps; s++) {
      const rt_step_t *st2 = &rc->steps[s];
      d->view_off[c][s] = vo;
      for (int k = 0; k < st2->nin + st2->nout; k++) {
        int slot = k < st2->nin ? st2->in[k] : st2->out[k - st2->nin];
        const ts_shape_t *sh = rc->slot_shape[slot];
        d->views[c][vo + (size_t)k] = (ts_array_t){sh->elem, sh->rank, sh->dims, NULL};
      }
      vo += (size_t)(st2->nin + st2->nout);
      d->infl[c][s] = st2->kind == ST_COLL_START ? ninfl++ : -1;
      d->ptr_off[c][s] = nptrs;
      if (st2->kind == ST_CALL || st2->kind == ST_WHILE || st2->kind == ST_COND) nptrs += (size_t)st2->nout;
    }
  }
  d->ninflight = ninfl;
  d->ptrs = ts_calloc(nptrs + 1, sizeof *d->ptrs);
  if (!d->ptrs) goto nomem;
  d->inflight = ts_calloc((size_t)ninfl + 1, sizeof *d->inflight);
  if (!d->inflight) goto nomem;
  for (int k = 0; k < p->noutputs; k++) {
    const ts_shape_t *s = p->out_shape[k];
    d->outputs[k] = (ts_array_t){s->elem, s->rank, s->dims, d->bufdata[p->entry][p->out_buf[k]]};
  }
  int64_t P = p->partitions;
  for (int k = 0; k < RT_MAX_DEPTH; k++) {
    d->ctx[k].apply = apply;
    d->ctx[k].apply_state = d;
    d->ctx[k].partition_id = opts->device_id % P;
    d->ctx[k].replica_id = opts->device_id / P;
    d->ctx[k].diag = diag;
    d->ctx[k].source = p->m->source.text ? &p->m->source : NULL;
  }
  if (opts->progress) {
    ts_hang_progress_t *pr = opts->progress;
    int n = 0;
    pr->instr_names = ts_rt_program_instr_names(p);
    pr->ninstrs = p->ninstrs;
    pr->comms = rt_coll_device_comms(d->colls, &n);
    pr->ncomms = n;
    atomic_store_explicit(&pr->instr, -1, memory_order_relaxed);
    atomic_store_explicit(&pr->activity, (int32_t)TS_HANG_IDLE, memory_order_relaxed);
  }
  *out = d;
  return TS_OK;
nomem:
  st = TS_ERR_NOMEM;
fail:
  ts_rt_device_destroy(d);
  return st;
}

void ts_rt_device_destroy(ts_rt_device_t *d) {
  if (!d) return;
  const ts_rt_program_t *p = d->p;
  for (int k = 0; d->inflight && k < d->ninflight; k++)
    if (d->inflight[k].active) rt_coll_cancel(&d->inflight[k]);
  if (d->mem) {
    if (d->opts.world) ts_coll_free(d->opts.world, d->mem);
    else ts_free(d->mem);
  }
  rt_coll_device_destroy(d->colls);
  for (int c = 0; c < p->ncomps; c++) {
    if (d->bufdata) ts_free(d->bufdata[c]);
    if (d->views) ts_free(d->views[c]);
    if (d->view_off) ts_free(d->view_off[c]);
    if (d->ptr_off) ts_free(d->ptr_off[c]);
    if (d->infl) ts_free(d->infl[c]);
  }
  for (int k = 0; k < RT_MAX_DEPTH; k++) ts_kernel_ctx_free(&d->ctx[k]);
  ts_free(d->bufdata);
  ts_free(d->views);
  ts_free(d->view_off);
  ts_free(d->ptr_off);
  ts_free(d->ptrs);
  ts_free(d->infl);
  ts_free(d->inflight);
  ts_free(d->inputs);
  ts_free(d->outputs);
  ts_free(d->events);
  ts_free(d);
}

ts_array_t *ts_rt_device_input(ts_rt_device_t *d, int i) {
  return i >= 0 && i < d->p->ninputs ? &d->inputs[i] : NULL;
}

const ts_array_t *ts_rt_device_output(ts_rt_device_t *d, int k) {
  return k >= 0 && k < d->p->noutputs ? &d->outputs[k] : NULL;
}

const ts_rt_event_t *ts_rt_device_trace(const ts_rt_device_t *d, size_t *n) {
  *n = d->nevents;
  return d->events;
}

void ts_rt_device_trace_clear(ts_rt_device_t *d) { d->nevents = 0; }

void ts_rt_device_step_times(const ts_rt_device_t *d, ts_rt_step_times_t *out) {
  out->total_ns = d->total_ns;
  out->kernel_ns = d->kernel_ns;
  out->collective_ns = d->coll_ns;
  uint64_t used = d->kernel_ns + d->coll_ns;
  out->other_ns = d->total_ns > used ? d->total_ns - used : 0;
}
