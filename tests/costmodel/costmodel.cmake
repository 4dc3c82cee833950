# The cost model (costmodel/): S-curve, interpolators, table formats, specs;
# the corpus run loads XLA's own tables and prints leave-one-out accuracy.
foreach(t test_costmodel_scurve test_costmodel_interp test_costmodel_tables test_costmodel_spec)
  add_executable(${t} costmodel/${t}.c)
  target_link_libraries(${t} PRIVATE ts_costmodel ts_common m)
  add_test(NAME ${t} COMMAND ${t})
  set_tests_properties(${t} PROPERTIES LABELS unit TIMEOUT 60)
endforeach()

# corpus: every table XLA ships (as copied to ../shared); skipped when absent.
add_executable(test_costmodel_corpus costmodel/test_costmodel_corpus.c)
target_link_libraries(test_costmodel_corpus PRIVATE ts_costmodel ts_common)
file(GLOB xla_tables ${TESSERA_SHARED_DIR}/corpus/xla_perf_tables/*.txtpb
     ${TESSERA_SHARED_DIR}/corpus/xla_perf_tables/*.pbtxt ${TESSERA_SHARED_DIR}/corpus/xla_perf_tables/*.pb)
if(xla_tables)
  foreach(f ${xla_tables})
    get_filename_component(base ${f} NAME)
    add_test(NAME corpus.xla_perf_tables.${base} COMMAND test_costmodel_corpus ${f})
    set_tests_properties(corpus.xla_perf_tables.${base} PROPERTIES LABELS corpus TIMEOUT 120)
  endforeach()
else()
  add_test(NAME corpus.xla_perf_tables.absent
           COMMAND sh -c "echo 'skipped: ${TESSERA_SHARED_DIR}/corpus/xla_perf_tables not found'; exit 77")
  set_tests_properties(corpus.xla_perf_tables.absent PROPERTIES LABELS corpus SKIP_RETURN_CODE 77)
endif()
