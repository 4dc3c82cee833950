/* runtime/feeder.c: which file or draw each parameter of each step comes
 * from (weights never from step folders, data from DIR/step<K>/ when there,
 * else DIR/), and the feeder thread handing steps out in order. */
#include "ts_npy.h"
#include "ts_interp.h"
#include "ts_test.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void write2(const char *dir, const char *name, float a, float b) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  float v[2] = {a, b};
  int64_t dims[1] = {2};
  ts_diag_t diag = {0};
  EXPECT(ts_npy_write(path, TS_F32, 1, dims, v, &diag) == TS_OK);
  ts_diag_free(&diag);
}

/* Element 0 of a value (f32[2]). */
static float first(ts_value_t *v) { return v ? ((const float *)v->a.data)[0] : -1; }

static float value_at(const ts_interp_inputs_t *in, int p, int64_t step) {
  ts_value_t *v = NULL;
  ts_diag_t diag = {0};
  ts_status_t st = ts_interp_param_value(in, p, step, &v, &diag);
  EXPECT(st == TS_OK);
  if (st != TS_OK) fprintf(stderr, "%s", diag.text ? diag.text : "");
  ts_diag_free(&diag);
  float x = first(v);
  ts_value_unref(v);
  return x;
}

int main(void) {
  const char *text = "HloModule f\n"
                     "ENTRY e {\n"
                     "  w = f32[2] parameter(0)\n"
                     "  x = f32[2] parameter(1)\n"
                     "  ROOT s = f32[2] add(w, x)\n"
                     "}\n";
  ts_source_t src = {"feeder", text, strlen(text)};
  ts_hlo_module_t *m = NULL;
  ts_diag_t diag = {0};
  if (ts_hlo_parse(&src, NULL, &m, &diag) != TS_OK) return 1;
  char dir[] = "/tmp/ts_feeder_XXXXXX", step2[600];
  if (!mkdtemp(dir)) return 1;
  snprintf(step2, sizeof step2, "%s/step2", dir);
  mkdir(step2, 0755);
  write2(dir, "param0.npy", 1, 2);
  write2(dir, "param1.npy", 10, 20);
  write2(step2, "param0.npy", 99, 99); /* a weight's: never read */
  write2(step2, "param1.npy", 30, 40);

  bool is_weight[2] = {true, false};
  ts_interp_inputs_t in = {.m = m, .dir = dir, .is_weight = is_weight};
  EXPECT(value_at(&in, 0, 1) == 1);
  EXPECT(value_at(&in, 0, 2) == 1);  /* weights: DIR/param0.npy at every step */
  EXPECT(value_at(&in, 1, 1) == 10); /* no step1/: DIR/param1.npy */
  EXPECT(value_at(&in, 1, 2) == 30); /* step2/param1.npy */
  EXPECT(value_at(&in, 1, 3) == 10); /* no step3/: back to DIR/ */

  /* The feeder: steps 2 and 3 in order, data parameters only; then nothing. */
  ts_interp_feeder_t *f = NULL;
  EXPECT(ts_interp_feeder_start(&in, 2, 3, 2, 1, &f) == TS_OK);
  if (f) {
    ts_value_t *const *vals = NULL;
    EXPECT(ts_interp_feeder_acquire(f, 2, 10, &vals, &diag) == TS_OK);
    EXPECT(vals && vals[0] == NULL && first(vals[1]) == 30);
    ts_interp_feeder_release(f, 2);
    EXPECT(ts_interp_feeder_acquire(f, 3, 10, &vals, &diag) == TS_OK);
    EXPECT(vals && vals[0] == NULL && first(vals[1]) == 10);
    ts_interp_feeder_release(f, 3);
    EXPECT(ts_interp_feeder_acquire(f, 4, 0.2, &vals, &diag) == TS_ERR_TIMEOUT);
    EXPECT(diag.text && strstr(diag.text, "step 4: no input batch from the input feeder"));
    ts_diag_free(&diag);
    ts_interp_feeder_stop(f);
  }

  /* Drawn: step 1 is ts_interp_random_param(seed); data moves with the
   * step, weights (without init_weights) keep step 1's draw. */
  ts_interp_inputs_t rnd = {.m = m, .seed = 5, .is_weight = is_weight};
  ts_value_t *ref = NULL;
  EXPECT(ts_interp_random_param(m, 5, 1, &ref) == TS_OK);
  EXPECT(value_at(&rnd, 1, 1) == first(ref));
  EXPECT(value_at(&rnd, 1, 2) != first(ref));
  EXPECT(value_at(&rnd, 0, 3) == value_at(&rnd, 0, 1));
  ts_value_unref(ref);

  char cmd[700];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  EXPECT(system(cmd) == 0);
  ts_hlo_module_destroy(m);
  ts_interp_release_buffers();
  return failures != 0;
}
