# XLA conformance (issue 15): XLA's own parser tests and real dumps, run through
# `tessera opt` by tests/conformance/report.py, one test per corpus folder.
# Each prints every failing case and the folder's count; failures listed in
# tests/conformance/known_failures.txt (with who owns them) are expected, any
# other fails the test. Skipped (77) when ../shared or python3 is absent.
find_program(TS_CONFORMANCE_PYTHON3 NAMES python3)
set(conformance_corpus ${TESSERA_SHARED_DIR}/corpus/xla_tests)
foreach(folder parser_valid parser_invalid real)
  if(TS_CONFORMANCE_PYTHON3)
    add_test(NAME conformance.${folder}
             COMMAND ${TS_CONFORMANCE_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/conformance/report.py
                     --tessera $<TARGET_FILE:tessera> --corpus ${conformance_corpus}
                     --known ${CMAKE_CURRENT_SOURCE_DIR}/conformance/known_failures.txt ${folder})
  else()
    add_test(NAME conformance.${folder} COMMAND sh -c "echo 'skipped: python3 not found'; exit 77")
  endif()
  set_tests_properties(conformance.${folder} PROPERTIES LABELS conformance SKIP_RETURN_CODE 77 TIMEOUT 1200)
endforeach()

# unit tests of the parser's XLA syntax (values worked out by hand)
add_executable(test_parser_xla hlo/test_parser_xla.c)
target_include_directories(test_parser_xla PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(test_parser_xla PRIVATE ts_hlo ts_common)
add_test(NAME test_parser_xla COMMAND test_parser_xla)
set_tests_properties(test_parser_xla PROPERTIES LABELS unit TIMEOUT 60)
