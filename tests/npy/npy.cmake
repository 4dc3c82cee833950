# The .npy reader and writer. Goldens made once by tests/npy/goldens/make_goldens.py
# (numpy); the test itself does not need numpy. ts_unit_test registers the test
# without arguments, so the goldens folder travels in the environment
# (argv[1], when given, overrides it).
ts_unit_test(test_npy)
target_link_libraries(test_npy PRIVATE ts_npy)
set_property(TEST test_npy APPEND PROPERTY ENVIRONMENT
             "TS_NPY_GOLDENS=${CMAKE_CURRENT_SOURCE_DIR}/npy/goldens")
