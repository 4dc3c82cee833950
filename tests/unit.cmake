# Unit tests of common/ and the HLO IR builder and printer.
ts_unit_test(test_common)
ts_unit_test(test_collective)
ts_unit_test(test_printer)

# Grammar coverage: hand-written modules that exercise forms the corpus has
# few or none of; each must parse, verify and round-trip like a corpus file.
file(GLOB grammar_modules CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/hlo/*.hlo)
foreach(f ${grammar_modules})
  get_filename_component(name ${f} NAME_WE)
  add_test(NAME grammar.${name} COMMAND test_roundtrip ${f})
  set_tests_properties(grammar.${name} PROPERTIES LABELS unit TIMEOUT 60)
endforeach()
