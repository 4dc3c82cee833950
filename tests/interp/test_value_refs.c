/* Values are shared across device threads: `tessera run --devices N` hands
 * every device thread the same step-1 input value, and each thread takes and
 * drops a reference while it copies its part. The count must survive that
 * (a lost increment freed a value under another thread, a lost decrement
 * leaked it: run.per_device_dump.devices2, stop 26). Four threads each take
 * and drop a million references to one value; the count must end where it
 * started, and the value must still be whole. */
#include "ts_interp.h"

#include "ts_test.h"

#include <pthread.h>

#define THREADS 4
#define ROUNDS 1000000

static void *hammer(void *arg) {
  ts_value_t *v = arg;
  for (int k = 0; k < ROUNDS; k++) {
    ts_value_ref(v);
    ts_value_ref(v);
    ts_value_unref(v);
    ts_value_unref(v);
  }
  return NULL;
}

int main(void) {
  int64_t dims[1] = {8};
  ts_shape_t s = {.elem = TS_F32, .rank = 1, .dims = dims};
  ts_value_t *v = ts_value_new(&s);
  if (!v) return 1;
  ((float *)v->a.data)[7] = 3.5f;
  pthread_t t[THREADS];
  for (int i = 0; i < THREADS; i++)
    if (pthread_create(&t[i], NULL, hammer, v) != 0) return 1;
  for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
  EXPECT_EQ(v->refs, 1);
  EXPECT_EQ(((float *)v->a.data)[7], 3.5f);
  ts_value_unref(v);
  ts_interp_release_buffers();
  return failures != 0;
}
