# common/: status codes, allocation, arenas, string maps, files.
ts_unit_test(test_common CASES status arena strmap buf diag)
