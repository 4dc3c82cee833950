/* checkpoint/ in one process: box runs against a naive walk; a checkpoint
 * written by 4 devices (threads backend) of a module with a 2x2-tiled, an
 * unevenly tiled and a replicated array, each element a known function of
 * its global index and the step, read back whole (assemble) and resumed
 * onto 2 devices under other shardings (each tile, padding zero); --keep;
 * the manifest's JSON round trip; a flipped byte refused by every device
 * naming the file; a module whose shape differs refused naming the array. */
#include "../ts_test.h"
#include "ckpt_internal.h"
#include "ts_checkpoint.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- box runs ----------------------------------------------------------- */

static ts_status_t copy_run(void *arg, int64_t dst_at, int64_t src_at, int64_t n) {
  float **p = arg;
  memcpy(p[0] + dst_at, p[1] + src_at, (size_t)n * sizeof(float));
  return TS_OK;
}

static void test_box_runs(void) {
  int64_t sd[3] = {4, 5, 6}, dd[3] = {3, 7, 6}, so[3] = {1, 0, 0}, doff[3] = {0, 2, 0}, ext[3] = {3, 5, 6};
  float src[120], dst[126], want[126];
  for (int i = 0; i < 120; i++) src[i] = (float)i;
  memset(dst, 0, sizeof dst);
  memset(want, 0, sizeof want);
  for (int a = 0; a < ext[0]; a++)
    for (int b = 0; b < ext[1]; b++)
      for (int c = 0; c < ext[2]; c++)
        want[((doff[0] + a) * dd[1] + doff[1] + b) * dd[2] + doff[2] + c] =
            src[((so[0] + a) * sd[1] + so[1] + b) * sd[2] + so[2] + c];
  float *p[2] = {dst, src};
  EXPECT(ckpt_box_runs(3, ext, dd, doff, sd, so, copy_run, p) == TS_OK);
  EXPECT(memcmp(dst, want, sizeof dst) == 0);
  /* A scalar is one run of one element. */
  float s = 7, t = 0;
  float *q[2] = {&t, &s};
  EXPECT(ckpt_box_runs(0, NULL, NULL, NULL, NULL, NULL, copy_run, q) == TS_OK && t == 7);
}

/* ---- a run ---------------------------------------------------------------- */

/* w: f32[6,8] tiled 2x2; b: f32[5] tiled 2 ways (3 + 2) and replicated on
 * the other 2; c: s32[3] replicated. The step returns them updated. */
static const char *module_text(const char *ws, const char *bs, int bdim) {
  static char buf[2048];
  snprintf(buf, sizeof buf,
           "HloModule t, input_output_alias={ {0}: (0, {}, may-alias), {1}: (1, {}, may-alias), {2}: (2, {}, may-alias) }\n"
           "ENTRY e {\n"
           "  w = f32[6,8]{1,0} parameter(0), sharding=%s, metadata={op_name=\"params[\\'w\\']\"}\n"
           "  b = f32[%d]{0} parameter(1), sharding=%s\n"
           "  c = s32[3]{0} parameter(2), sharding={replicated}\n"
           "  ROOT t = (f32[6,8]{1,0}, f32[%d]{0}, s32[3]{0}) tuple(w, b, c)\n"
           "}\n",
           ws, bdim, bs, bdim);
  return buf;
}

static ts_hlo_module_t *parse(const char *text) {
  ts_source_t src = {"t.hlo", text, strlen(text)};
  ts_hlo_module_t *m = NULL;
  ts_diag_t d = {0};
  if (ts_hlo_parse(&src, NULL, &m, &d) != TS_OK) fprintf(stderr, "%s\n", d.text);
  ts_diag_free(&d);
  return m;
}

static double value(int array, int64_t flat, int64_t step) { return array * 1000 + (double)flat + 0.25 * (double)step; }

typedef struct {
  ts_hlo_module_t *m;
  ts_sharding_value_t *sv[3];
  bool weight[3];
  int ndev;
  int64_t P;
} setup_t;

static void setup(setup_t *s, const char *ws, const char *bs, int bdim, int ndev) {
  memset(s, 0, sizeof *s);
  s->m = parse(module_text(ws, bs, bdim));
  s->ndev = ndev;
  s->P = ndev;
  for (int p = 0; p < 3; p++) {
    s->weight[p] = true;
    const ts_hlo_instr_t *pi = s->m->entry->params[p];
    ts_sharding_from_syntax(s->m->arena, pi->sharding, pi->shape, &s->sv[p]);
  }
}

/* Device dev's padded tile of parameter p, each element value(p, its global
 * flat index, step), padding -1. */
typedef struct {
  ts_array_t a;
  int64_t dims[4];
  void *data;
} tile_t;

static void tile_alloc(setup_t *s, int p, int64_t dev, tile_t *t) {
  const ts_shape_t *sh = s->m->entry->params[p]->shape;
  ts_sharding_shard_dims(s->sv[p], sh, t->dims);
  int64_t n = 1;
  for (int d = 0; d < sh->rank; d++) n *= t->dims[d];
  t->data = calloc((size_t)n + 1, 4);
  t->a = (ts_array_t){sh->elem, sh->rank, t->dims, t->data};
  (void)dev;
}

static void tile_fill(setup_t *s, int p, int64_t dev, int64_t step, tile_t *t) {
  const ts_shape_t *sh = s->m->entry->params[p]->shape;
  int64_t off[4], lim[4];
  ts_sharding_shard(s->sv[p], sh, dev, off, lim);
  int64_t n = 1;
  for (int d = 0; d < sh->rank; d++) n *= t->dims[d];
  for (int64_t i = 0; i < n; i++) {
    int64_t rem = i, flat = 0, stride = 1;
    bool pad = false;
    int64_t idx[4];
    for (int d = sh->rank - 1; d >= 0; d--) {
      idx[d] = rem % t->dims[d];
      rem /= t->dims[d];
    }
    for (int d = sh->rank - 1; d >= 0; d--) {
      int64_t g = off[d] + idx[d];
      pad |= g >= lim[d];
      flat += g * stride;
      stride *= sh->dims[d];
    }
    double v = pad ? -1 : value(p, flat, step);
    if (sh->elem == TS_F32) ((float *)t->data)[i] = (float)v;
    else ((int32_t *)t->data)[i] = (int32_t)(pad ? -1 : p * 1000 + flat + step);
  }
}

/* What tile_fill puts there, checked (padding must read 0 after a restore). */
static int tile_check(setup_t *s, int p, int64_t dev, int64_t step, const tile_t *t) {
  tile_t want;
  tile_alloc(s, p, dev, &want);
  tile_fill(s, p, dev, step, &want);
  int64_t n = 1;
  for (int d = 0; d < t->a.rank; d++) n *= t->dims[d];
  int bad = 0;
  for (int64_t i = 0; i < n; i++) {
    int32_t w, g;
    memcpy(&w, (char *)want.data + 4 * i, 4);
    memcpy(&g, (char *)t->data + 4 * i, 4);
    float wf;
    memcpy(&wf, &w, 4);
    bool pad = s->m->entry->params[p]->shape->elem == TS_F32 ? wf == -1 : w == -1;
    if (pad ? g != 0 : g != w) bad++;
  }
  free(want.data);
  return bad;
}

typedef struct {
  setup_t *s;
  ts_ckpt_t *c;
  ts_coll_comm_t *world;
  int dev;
  int64_t steps;
  bool restore;
  int64_t check_step; /* restore: the step whose values must be there */
  ts_status_t st;
  char msg[512];
  int bad;
} dev_arg_t;

static void *device(void *arg) {
  dev_arg_t *a = arg;
  tile_t t[3];
  ts_array_t *state[3];
  for (int p = 0; p < 3; p++) {
    tile_alloc(a->s, p, a->dev, &t[p]);
    state[p] = &t[p].a;
  }
  ts_diag_t d = {0};
  if (a->restore) {
    memset(t[0].data, 0x55, 4); /* restore must overwrite (and zero padding) */
    a->st = ts_ckpt_restore(a->c, a->dev, a->world, state, &d);
    if (a->st == TS_OK)
      for (int p = 0; p < 3; p++) a->bad += tile_check(a->s, p, a->dev, a->check_step, &t[p]);
  } else {
    for (int64_t step = 1; step <= a->steps && a->st == TS_OK; step++) {
      for (int p = 0; p < 3; p++) tile_fill(a->s, p, a->dev, step, &t[p]);
      a->st = ts_ckpt_step_end(a->c, a->dev, a->world, step, state, &d);
    }
  }
  snprintf(a->msg, sizeof a->msg, "%s", d.text ? d.text : "");
  ts_diag_free(&d);
  for (int p = 0; p < 3; p++) free(t[p].data);
  return NULL;
}

/* Runs the devices of one process (all of them) through write or restore. */
static ts_status_t run_devices(setup_t *s, ts_ckpt_t *c, bool restore, int64_t steps, int64_t check_step,
                               char *msg, size_t msgn, int *bad) {
  ts_coll_comm_t *comms[8];
  dev_arg_t args[8];
  pthread_t th[8];
  if (ts_coll_comm_create_threads(s->ndev, comms) != TS_OK) return TS_ERR_SYSTEM;
  for (int d = 0; d < s->ndev; d++) {
    args[d] = (dev_arg_t){s, c, comms[d], d, steps, restore, check_step, TS_OK, "", 0};
    pthread_create(&th[d], NULL, device, &args[d]);
  }
  ts_status_t st = TS_OK;
  *bad = 0;
  for (int d = 0; d < s->ndev; d++) {
    pthread_join(th[d], NULL);
    if (args[d].st != TS_OK && st == TS_OK) {
      st = args[d].st;
      snprintf(msg, msgn, "%s", args[d].msg);
    }
    if (args[d].st != args[0].st) EXPECT(!"every device returns the same verdict");
    *bad += args[d].bad;
    ts_coll_comm_destroy(comms[d]);
  }
  return st;
}

static ts_ckpt_opts_t opts_for(setup_t *s, const char *dir, const char *resume, int64_t steps, int64_t every) {
  ts_ckpt_opts_t o = {.m = s->m, .is_weight = s->weight, .param_sv = s->sv, .partitions = s->P,
                      .ndevices = s->ndev, .first = 0, .nlocal = s->ndev, .loop = true, .steps = steps,
                      .quiet = true};
  ts_ckpt_flags_default(&o.flags);
  o.flags.dir = dir;
  o.flags.resume = resume;
  o.flags.every = every;
  o.flags.keep = 2;
  return o;
}

int main(void) {
  test_box_runs();
  char dir[] = "/tmp/test_checkpoint.XXXXXX";
  if (!mkdtemp(dir)) return 1;
  char msg[512] = "";
  int bad = 0;

  /* Write: 4 devices, steps 1..6, every 2, keep 2. */
  setup_t w;
  setup(&w, "{devices=[2,2]<=[4]}", "{devices=[2,2]<=[4] last_tile_dim_replicate}", 5, 4);
  EXPECT(w.m != NULL);
  ts_ckpt_t *c = NULL;
  ts_diag_t d = {0};
  ts_ckpt_opts_t o = opts_for(&w, dir, NULL, 6, 2);
  EXPECT(ts_ckpt_create(&o, &c, &d) == TS_OK && c);
  EXPECT(run_devices(&w, c, false, 6, 0, msg, sizeof msg, &bad) == TS_OK);
  ts_ckpt_stats_t stats;
  ts_ckpt_stats(c, &stats);
  EXPECT(stats.committed == 3 && stats.failed == 0);
  ts_ckpt_destroy(c);

  int64_t *steps;
  int n;
  EXPECT(ts_ckpt_list_steps(dir, &steps, &n, &d) == TS_OK);
  EXPECT(n == 2 && steps[0] == 4 && steps[1] == 6); /* --keep 2 */
  ts_free(steps);

  /* The manifest: 4 boxes of w, 2 of b (replicas written once), 1 of c. */
  char stepdir[512];
  snprintf(stepdir, sizeof stepdir, "%s/step-6", dir);
  ts_ckpt_manifest_t m;
  EXPECT(ts_ckpt_manifest_read(stepdir, &m, &d) == TS_OK);
  EXPECT(m.step == 6 && m.next_step == 7 && m.narrays == 3 && m.nfiles == 7);
  EXPECT(strcmp(m.arrays[0].name, "params['w']") == 0 && strcmp(m.arrays[1].name, "b") == 0);
  EXPECT(m.arrays[0].nshards == 4 && m.arrays[1].nshards == 2 && m.arrays[2].nshards == 1);
  EXPECT(m.arrays[1].shards[1].start[0] == 3 && m.arrays[1].shards[1].limit[0] == 5); /* uneven: 3 + 2 */
  /* Replicas of b (devices 0,1 and 2,3) spread: array 1 takes holder 1. */
  EXPECT(m.files[m.arrays[1].shards[0].file].device == 1);
  for (int f = 0; f < m.nfiles; f++) EXPECT(ts_ckpt_verify_file(stepdir, &m, f, &d) == TS_OK);
  /* JSON round trip. */
  char *j1 = NULL, *j2 = NULL;
  ts_ckpt_manifest_t m2;
  char rt[600];
  snprintf(rt, sizeof rt, "%s/rt", dir);
  EXPECT(ckpt_mkdir(rt) == 0);
  EXPECT(ts_ckpt_manifest_json(&m, &j1) == TS_OK);
  snprintf(rt + strlen(rt), sizeof rt - strlen(rt), "/manifest.json");
  EXPECT(ckpt_write_synced(rt, j1, strlen(j1), &d) == TS_OK);
  rt[strlen(rt) - strlen("/manifest.json")] = 0;
  EXPECT(ts_ckpt_manifest_read(rt, &m2, &d) == TS_OK);
  EXPECT(ts_ckpt_manifest_json(&m2, &j2) == TS_OK);
  EXPECT(j1 && j2 && strcmp(j1, j2) == 0);
  ts_free(j1);
  ts_free(j2);
  ts_ckpt_manifest_free(&m2);
  ckpt_remove_dir(rt);

  /* Assemble: every element is value(array, flat, 6). */
  float wfull[48], bfull[5];
  int32_t cfull[3];
  EXPECT(ts_ckpt_assemble(stepdir, &m, 0, wfull, &d) == TS_OK);
  EXPECT(ts_ckpt_assemble(stepdir, &m, 1, bfull, &d) == TS_OK);
  EXPECT(ts_ckpt_assemble(stepdir, &m, 2, cfull, &d) == TS_OK);
  for (int i = 0; i < 48; i++) EXPECT(wfull[i] == (float)value(0, i, 6));
  for (int i = 0; i < 5; i++) EXPECT(bfull[i] == (float)value(1, i, 6));
  for (int i = 0; i < 3; i++) EXPECT(cfull[i] == 2000 + i + 6);
  ts_ckpt_manifest_free(&m);

  /* Resume onto 2 devices, w tiled by rows now and b replicated; steps 10:
   * the newest (6) is picked, each device reads its tiles. */
  setup_t r;
  setup(&r, "{devices=[1,2]<=[2]}", "{devices=[2]<=[2]}", 5, 2);
  o = opts_for(&r, NULL, dir, 10, 0);
  c = NULL;
  EXPECT(ts_ckpt_create(&o, &c, &d) == TS_OK && c);
  EXPECT(ts_ckpt_first_step(c) == 7);
  EXPECT(run_devices(&r, c, true, 0, 6, msg, sizeof msg, &bad) == TS_OK);
  EXPECT(bad == 0);
  ts_ckpt_destroy(c);
  /* --steps 5: the newest before it is 4. */
  o = opts_for(&r, NULL, dir, 5, 0);
  c = NULL;
  EXPECT(ts_ckpt_create(&o, &c, &d) == TS_OK && c && ts_ckpt_first_step(c) == 5);
  EXPECT(run_devices(&r, c, true, 0, 4, msg, sizeof msg, &bad) == TS_OK && bad == 0);
  ts_ckpt_destroy(c);

  /* A flipped byte: every device refuses, naming the file. */
  char victim[600];
  snprintf(victim, sizeof victim, "%s/p0.s3.npy", stepdir);
  FILE *f = fopen(victim, "r+b");
  EXPECT(f != NULL);
  if (f) {
    fseek(f, 130, SEEK_SET);
    fputc(0x7f, f);
    fclose(f);
  }
  o = opts_for(&r, NULL, dir, 10, 0);
  c = NULL;
  EXPECT(ts_ckpt_create(&o, &c, &d) == TS_OK && c);
  EXPECT(run_devices(&r, c, true, 0, 6, msg, sizeof msg, &bad) == TS_ERR_VERIFY);
  EXPECT(strstr(msg, "p0.s3.npy") && strstr(msg, "checksum mismatch"));
  ts_ckpt_destroy(c);

  /* Another global shape: refused at create, naming the array. */
  setup_t x;
  setup(&x, "{devices=[1,2]<=[2]}", "{devices=[2]<=[2]}", 6, 2);
  o = opts_for(&x, NULL, dir, 10, 0);
  c = NULL;
  ts_diag_free(&d);
  EXPECT(ts_ckpt_create(&o, &c, &d) == TS_ERR_VERIFY && !c);
  EXPECT(d.text && strstr(d.text, "parameter 1 (b) is f32[6] in the module but f32[5] in the checkpoint"));
  ts_diag_free(&d);

  ts_hlo_module_destroy(w.m);
  ts_hlo_module_destroy(r.m);
  ts_hlo_module_destroy(x.m);
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) failures++;
  if (failures) fprintf(stderr, "%d failures\n", failures);
  else printf("ok\n");
  return failures != 0;
}
