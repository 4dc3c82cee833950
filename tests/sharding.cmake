# The sharding module: unit tests with hand-computed goldens, and the corpus
# test (every sharding= in ../shared re-reads equal from its canonical text).
ts_unit_test(test_sharding)
target_link_libraries(test_sharding PRIVATE ts_sharding)
