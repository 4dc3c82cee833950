/* Resuming: the newest complete checkpoint before --steps, checked against
 * the module (names, global shapes, dtypes), and each device's tiles read
 * from whichever shard files overlap them (resharding when the checkpoint
 * was written under another mesh), with the files' checksums verified by
 * the devices in turn. */
#include "ckpt_internal.h"

#include <inttypes.h>
#include <string.h>

static void shape_text(char *buf, size_t n, ts_elem_t e, int rank, const int64_t *dims) {
  int w = snprintf(buf, n, "%s[", ts_elem_name(e));
  for (int d = 0; d < rank && w < (int)n; d++) w += snprintf(buf + w, n - (size_t)w, d ? ",%lld" : "%lld", (long long)dims[d]);
  if (w < (int)n) snprintf(buf + w, n - (size_t)w, "]");
}

ts_status_t ckpt_open_resume(ts_ckpt_t *c, ts_diag_t *diag) {
  const char *dir = c->o.flags.resume;
  int64_t *steps;
  int n;
  TS_CHECK(ts_ckpt_list_steps(dir, &steps, &n, diag));
  int pick = -1;
  for (int i = 0; i < n; i++)
    if (steps[i] < c->o.steps) pick = i;
  if (n == 0) {
    /* A job killed before its first checkpoint reruns from the start: the
     * same command line resumes whenever there is something to resume. */
    ts_free(steps);
    if (!c->o.quiet) {
      fprintf(stderr, "tessera run: warning: --resume %s: no complete checkpoint there; starting from step 1\n", dir);
      fflush(stderr);
    }
    return TS_OK;
  }
  if (pick < 0) {
    ts_diag_plain(diag, "--resume %s: every checkpoint there (the oldest: step %lld) is at or past --steps %lld",
                  dir, (long long)steps[0], (long long)c->o.steps);
    ts_free(steps);
    return TS_ERR_INVALID_ARGUMENT;
  }
  int64_t step = steps[pick];
  ts_free(steps);
  ckpt_step_path(c->resume_dir, sizeof c->resume_dir, dir, step, false);
  TS_CHECK(ts_ckpt_manifest_read(c->resume_dir, &c->rm, diag));
  const ts_ckpt_manifest_t *m = &c->rm;
  c->rmap = ts_calloc((size_t)c->narrays + 1, sizeof *c->rmap);
  if (!c->rmap) return TS_ERR_NOMEM;
  /* The first difference, in the module's parameter order. */
  for (int k = 0; k < c->narrays; k++) {
    const ckpt_array_t *a = &c->arrays[k];
    int found = -1;
    for (int i = 0; i < m->narrays && found < 0; i++)
      if (strcmp(m->arrays[i].name, a->name) == 0) found = i;
    if (found < 0) {
      ts_diag_plain(diag, "--resume %s: error: parameter %d (%s) of the module is not in the checkpoint", c->resume_dir,
                    a->param, a->name);
      return TS_ERR_VERIFY;
    }
    const ts_ckpt_marray_t *ma = &m->arrays[found];
    bool same = ma->elem == a->shape->elem && ma->rank == a->shape->rank;
    for (int d = 0; same && d < ma->rank; d++) same = ma->dims[d] == a->shape->dims[d];
    if (!same) {
      char want[256], got[256];
      shape_text(want, sizeof want, a->shape->elem, a->shape->rank, a->shape->dims);
      shape_text(got, sizeof got, ma->elem, ma->rank, ma->dims);
      ts_diag_plain(diag, "--resume %s: error: parameter %d (%s) is %s in the module but %s in the checkpoint",
                    c->resume_dir, a->param, a->name, want, got);
      return TS_ERR_VERIFY;
    }
    c->rmap[k] = found;
  }
  for (int i = 0; i < m->narrays; i++) {
    bool used = false;
    for (int k = 0; k < c->narrays && !used; k++) used = c->rmap[k] == i;
    if (!used) {
      ts_diag_plain(diag, "--resume %s: error: the checkpoint's array %s is no parameter the module updates",
                    c->resume_dir, m->arrays[i].name);
      return TS_ERR_VERIFY;
    }
  }
  if (c->o.seeded && c->o.seed != m->seed) {
    ts_diag_plain(diag, "--resume %s: error: --random-inputs %" PRIu64 ", but the checkpoint was trained on seed %" PRIu64,
                  c->resume_dir, c->o.seed, m->seed);
    return TS_ERR_VERIFY;
  }
  if (!c->o.inputs_dir != !m->inputs_dir) {
    ts_diag_plain(diag, "--resume %s: error: the checkpoint was trained on %s inputs, this run has %s", c->resume_dir,
                  m->inputs_dir ? "--inputs" : "random", c->o.inputs_dir ? "--inputs" : "random");
    return TS_ERR_VERIFY;
  }
  c->resuming = true;
  c->seed = m->seed;
  c->first_step = m->next_step;
  return TS_OK;
}

/* The verdict each device contributes. */
typedef struct {
  int32_t status;
  int32_t device;
  char msg[504];
} verdict_t;

ts_status_t ts_ckpt_restore(ts_ckpt_t *c, int local, ts_coll_comm_t *world, ts_array_t *const *state,
                            ts_diag_t *diag) {
  if (!c || !c->resuming) return TS_OK;
  int dev = c->o.first + local, W = c->o.ndevices;
  double t0 = ts_now_ms();
  ts_diag_t d = {0};
  ts_status_t st = TS_OK;
  int64_t bytes = 0;
  for (int f = dev; f < c->rm.nfiles && st == TS_OK; f += W) st = ts_ckpt_verify_file(c->resume_dir, &c->rm, f, &d);
  for (int k = 0; k < c->narrays && st == TS_OK; k++) {
    const ckpt_array_t *a = &c->arrays[k];
    ts_array_t *s = state[k];
    int rank = a->shape->rank;
    int64_t start[TS_CKPT_MAX_RANK], limit[TS_CKPT_MAX_RANK];
    if (!s || s->rank != rank || s->elem != a->shape->elem) {
      ts_diag_plain(&d, "checkpoint: the state buffer of %s does not match its parameter", a->name);
      st = TS_ERR_INTERNAL;
      break;
    }
    if (a->sv) st = ts_sharding_shard(a->sv, a->shape, dev % c->o.partitions, start, limit);
    else
      for (int r = 0; r < rank; r++) {
        start[r] = 0;
        limit[r] = a->shape->dims[r];
      }
    if (st != TS_OK) break;
    /* Padding (uneven tiles) reads as zeros, as a freshly cut shard has. */
    bool whole = true;
    int64_t n = 1;
    for (int r = 0; r < rank; r++) {
      whole &= limit[r] - start[r] == s->dims[r];
      n *= limit[r] > start[r] ? limit[r] - start[r] : 0;
    }
    if (!whole) memset(s->data, 0, ts_array_bytes(s));
    if (n > 0) st = ts_ckpt_read_box(c->resume_dir, &c->rm, c->rmap[k], start, limit, s->data, s->dims, &d);
    bytes += n * ts_elem_storage_bytes(a->shape->elem);
  }
  double local_ms = ts_now_ms() - t0;
  verdict_t mine = {.status = st, .device = dev}, *all = ts_calloc((size_t)W, sizeof *all);
  if (!all) {
    ts_diag_free(&d);
    return TS_ERR_NOMEM;
  }
  snprintf(mine.msg, sizeof mine.msg, "%s", d.text ? d.text : "");
  ts_diag_free(&d);
  ts_coll_req_t *req;
  ts_status_t cst = ts_coll_allgather_post(world, &mine, all, sizeof mine, TS_U8, &req);
  if (cst == TS_OK) cst = ts_coll_wait(req, -1);
  if (cst != TS_OK) {
    ts_free(all);
    return cst;
  }
  for (int w = 0; w < W; w++)
    if (all[w].status != TS_OK) {
      all[w].msg[sizeof all[w].msg - 1] = 0;
      ts_diag_plain(diag, "--resume %s: %s", c->resume_dir, all[w].msg[0] ? all[w].msg : ts_status_string(all[w].status));
      st = all[w].status;
      ts_free(all);
      /* A bad checkpoint is the user's input: exit 2 on every rank alike. */
      return st == TS_ERR_NOMEM || st == TS_ERR_INTERNAL ? st : TS_ERR_VERIFY;
    }
  ts_free(all);
  if (dev == 0) {
    pthread_mutex_lock(&c->mu);
    c->stats.restore_ms = local_ms;
    c->stats.restored_bytes = bytes;
    pthread_mutex_unlock(&c->mu);
    if (!c->o.quiet) {
      printf("checkpoint: resumed from %s (step %lld; device 0 read %.2f MB in %.1f ms, verified and read its "
             "tiles in %.1f ms of it)\n", c->resume_dir, (long long)c->rm.step, (double)bytes / 1e6, ts_now_ms() - t0,
             local_ms);
      fflush(stdout);
    }
  }
  return TS_OK;
}
