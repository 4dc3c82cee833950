# common/: status codes, allocation, arenas, string and pointer maps, files.
ts_unit_test(test_common CASES text status arena strmap ptrmap buf diag interval_tree)
# The one table of collective kinds and XLA's replica-group modes (common/collective.c).
ts_unit_test(test_collective)
