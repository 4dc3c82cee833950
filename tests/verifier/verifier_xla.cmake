# The verifier against XLA's own verdicts: modules modelled on
# hlo_verifier_test.cc in tests/verifier/xla/{valid,invalid}, one test per
# case of each folder's cases.txt (see tests/verifier/xla/check.sh).
foreach(kind valid invalid)
  file(STRINGS ${CMAKE_CURRENT_SOURCE_DIR}/verifier/xla/${kind}/cases.txt lines REGEX "^[^#].*\\.hlo")
  foreach(line ${lines})
    string(REGEX REPLACE " *\\|.*" "" file "${line}")
    string(REGEX REPLACE "\\.hlo$" "" name "${file}")
    add_test(NAME verifier_xla.${kind}.${name}
             COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/verifier/xla/check.sh $<TARGET_FILE:tessera>
                     ${CMAKE_CURRENT_SOURCE_DIR}/verifier/xla ${kind} ${file})
    set_tests_properties(verifier_xla.${kind}.${name} PROPERTIES LABELS unit TIMEOUT 30)
  endforeach()
endforeach()
