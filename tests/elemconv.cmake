# Element-type conversion kernels (hlo/elemconv.c).
ts_unit_test(test_elemconv)
