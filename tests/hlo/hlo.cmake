# hlo/: the IR builder and printer, the parser (round trips of the corpus and
# of hand-written grammar modules, located errors for bad input), the
# verifier, element-type conversion.
ts_unit_test(test_printer CASES tables unique_names shapes build_and_print)
# How a parsed module holds its memory: shared shapes, exactly sized
# attribute arrays, interned attribute names, borrowed source text.
ts_unit_test(test_module_memory CASES shared_shapes shape_intern exact_attrs interned_names reserve_attrs
             borrow_text names_per_computation)
# Element-type conversion kernels (common/elemconv.c).
ts_unit_test(test_elemconv CASES fast_paths bf16 f16 f8 round_trip ties float_to_int int_to_int pred
             int_to_float float_to_float complex errors_and_bitcast)
# The HLO verifier on built modules (no parser involved) and on parsed text,
# by scenario group. Its bad-input goldens (bad_input/verify_*.hlo) are
# picked up by the bad_input glob below.
ts_unit_groups(test_verifier built text)

# --- bad input: every tests/bad_input/NAME.hlo with NAME.expected ---
file(GLOB bad_inputs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/bad_input/*.hlo)
foreach(f ${bad_inputs})
  get_filename_component(name ${f} NAME_WE)
  add_test(NAME bad_input.${name}
           COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/check_error.sh $<TARGET_FILE:tessera>
                   ${CMAKE_CURRENT_SOURCE_DIR}/bad_input ${name})
  set_tests_properties(bad_input.${name} PROPERTIES LABELS unit TIMEOUT 30)
endforeach()

# --- corpus: every module in ../shared parses, verifies and round-trips ---
add_executable(test_roundtrip hlo/test_roundtrip.c)
target_link_libraries(test_roundtrip PRIVATE ts_hlo ts_common)
set(corpus_dirs real_hlo real_hlo_large xla_spmd)
if(EXISTS ${TESSERA_SHARED_DIR}/corpus)
  foreach(d ${corpus_dirs})
    file(GLOB files ${TESSERA_SHARED_DIR}/corpus/${d}/*.hlo ${TESSERA_SHARED_DIR}/corpus/${d}/*.txt)
    foreach(f ${files})
      get_filename_component(base ${f} NAME)
      set(extra)
      # A fragment with a collective and no header: the group size comes from the flag.
      if(base STREQUAL "tensorflow__tensorflow__u4_all_gather_1x8.hlo")
        set(extra --replica-count 8)
      endif()
      add_test(NAME corpus.${d}.${base} COMMAND test_roundtrip ${extra} ${f})
      set_tests_properties(corpus.${d}.${base} PROPERTIES LABELS corpus TIMEOUT 120)
    endforeach()
  endforeach()
else()
  # shared/ is absent (e.g. a bare clone): skip cleanly, do not fail.
  add_test(NAME corpus.absent COMMAND sh -c "echo 'skipped: ${TESSERA_SHARED_DIR}/corpus not found'; exit 77")
  set_tests_properties(corpus.absent PROPERTIES LABELS corpus SKIP_RETURN_CODE 77)
endif()

# Grammar coverage: hand-written modules that exercise forms the corpus has
# few or none of; each must parse, verify and round-trip like a corpus file.
file(GLOB grammar_modules CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/hlo/*.hlo)
foreach(f ${grammar_modules})
  get_filename_component(name ${f} NAME_WE)
  add_test(NAME grammar.${name} COMMAND test_roundtrip ${f})
  set_tests_properties(grammar.${name} PROPERTIES LABELS unit TIMEOUT 60)
endforeach()
