# The sharding module: unit tests with hand-computed goldens, and the corpus
# tests (every sharding= in ../shared re-reads equal from its canonical text;
# every corpus module propagates to a verifier-valid assignment).

# A walk over ../shared/corpus; it exits 77 (skipped) when that is absent.
function(ts_sharding_corpus_test name target)
  add_executable(${target} sharding/${target}.c sharding/corpus_walk.c)
  target_link_libraries(${target} PRIVATE ts_sharding ts_hlo ts_common)
  add_test(NAME ${name} COMMAND ${target} ${TESSERA_SHARED_DIR}/corpus)
  set_tests_properties(${name} PROPERTIES LABELS corpus TIMEOUT 120 SKIP_RETURN_CODE 77)
endfunction()

# Values, canonical form, queries, transforms, reshard classification,
# meshes, Shardy: one test per scenario group, test_sharding runs them all.
ts_unit_groups(test_sharding tiles queries transforms text mesh edge)
target_link_libraries(test_sharding PRIVATE ts_sharding)
ts_sharding_corpus_test(corpus.sharding test_sharding_corpus)

# Propagation: one small module per op family, hand-derived expectations;
# one test per scenario group, test_propagate runs them all.
ts_unit_groups(test_propagate ops control data)
target_link_libraries(test_propagate PRIVATE ts_sharding)
ts_sharding_corpus_test(corpus.propagate test_propagate_corpus)
