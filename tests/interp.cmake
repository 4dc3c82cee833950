# Reference interpreter: every tests/interp/GROUP/NAME.hlo golden file is one
# test (values in its EXPECT comments, computed by hand or by the numpy
# script next to it; the tests themselves need no numpy).
add_executable(test_interp_golden test_interp_golden.c)
target_link_libraries(test_interp_golden PRIVATE ts_interp ts_hlo ts_common)
file(GLOB interp_goldens CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/interp/*/*.hlo)
foreach(f ${interp_goldens})
  get_filename_component(name ${f} NAME_WE)
  get_filename_component(dir ${f} DIRECTORY)
  get_filename_component(group ${dir} NAME)
  add_test(NAME interp.${group}.${name} COMMAND test_interp_golden ${f})
  set_tests_properties(interp.${group}.${name} PROPERTIES LABELS unit TIMEOUT 60)
endforeach()
