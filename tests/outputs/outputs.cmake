# Output targets (issue 19): devices, FIFOs and symlinks written in place
# or through, output folders checked before the run, --outputs replaced as
# a set, a full disk named with the file and leaving the previous set.
set(ts_outputs sh ${CMAKE_CURRENT_SOURCE_DIR}/outputs/check_outputs.sh)
foreach(c chardev fifo symlink readonly readonly_trace set enospc)
  add_test(NAME outputs.${c} COMMAND ${ts_outputs} ${c} $<TARGET_FILE:tessera> ${CMAKE_SOURCE_DIR})
  set_tests_properties(outputs.${c} PROPERTIES LABELS unit TIMEOUT 120 SKIP_RETURN_CODE 77)
endforeach()
set_tests_properties(outputs.enospc PROPERTIES LABELS "unit;faults")
