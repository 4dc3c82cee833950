/* Unit tests of sharding propagation, one file per scenario group
 * (test_propagate_GROUP.c); `test_propagate GROUP` runs one. */
#include "ts_test.h"

int test_propagate_ops(void);
int test_propagate_control(void);
int test_propagate_data(void);

static const ts_test_group_t groups[] = {
    {"ops", test_propagate_ops},
    {"control", test_propagate_control},
    {"data", test_propagate_data},
};

int main(int argc, char **argv) {
  return ts_test_main("test_propagate", argc, argv, groups, (int)(sizeof groups / sizeof groups[0]));
}
