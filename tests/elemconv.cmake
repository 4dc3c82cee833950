# Element-type conversion kernels (common/elemconv.c).
ts_unit_test(test_elemconv)
