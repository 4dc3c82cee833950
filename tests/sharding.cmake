# The sharding module: unit tests with hand-computed goldens, and the corpus
# test (every sharding= in ../shared re-reads equal from its canonical text).
ts_unit_test(test_sharding)
target_link_libraries(test_sharding PRIVATE ts_sharding)

add_executable(test_sharding_corpus test_sharding_corpus.c)
target_link_libraries(test_sharding_corpus PRIVATE ts_sharding ts_hlo ts_common)
# Exits 77 (skipped) when the corpus directory is absent.
add_test(NAME corpus.sharding COMMAND test_sharding_corpus ${TESSERA_SHARED_DIR}/corpus)
set_tests_properties(corpus.sharding PROPERTIES LABELS corpus TIMEOUT 120 SKIP_RETURN_CODE 77)

# Propagation: one small module per op family, hand-derived expectations.
ts_unit_test(test_propagate)
target_link_libraries(test_propagate PRIVATE ts_sharding)

add_executable(test_propagate_corpus test_propagate_corpus.c)
target_link_libraries(test_propagate_corpus PRIVATE ts_sharding ts_hlo ts_common)
# Exits 77 (skipped) when the corpus directory is absent.
add_test(NAME corpus.propagate COMMAND test_propagate_corpus ${TESSERA_SHARED_DIR}/corpus)
set_tests_properties(corpus.propagate PROPERTIES LABELS corpus TIMEOUT 120 SKIP_RETURN_CODE 77)
