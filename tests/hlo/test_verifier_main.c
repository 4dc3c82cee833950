/* Unit tests for ts_hlo_verify, one file per scenario group
 * (test_verifier_GROUP.c); `test_verifier GROUP` runs one. */
#include "ts_test.h"

int test_verifier_built(void);
int test_verifier_text(void);

static const ts_test_group_t groups[] = {
    {"built", test_verifier_built},
    {"text", test_verifier_text},
};

int main(int argc, char **argv) {
  int rc = ts_test_main("test_verifier", argc, argv, groups, (int)(sizeof groups / sizeof groups[0]));
  if (rc == 0) printf("test_verifier: ok\n");
  return rc;
}
