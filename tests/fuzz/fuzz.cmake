# libFuzzer targets (TESSERA_FUZZ=ON, clang only); run them with scripts/fuzz.sh.
# Included from tests/CMakeLists.txt after the libraries are defined.
if(NOT TESSERA_FUZZ)
  return()
endif()
if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
  message(WARNING "TESSERA_FUZZ=ON needs clang (configure with -DCMAKE_C_COMPILER=clang); "
                  "the fuzz targets are not built with ${CMAKE_C_COMPILER_ID}")
  return()
endif()

# The code under test gets coverage instrumentation and ASan/UBSan; UBSan
# aborts so that libFuzzer records undefined behaviour as a crash. Every
# program linking these libraries (tessera, the unit tests) then needs the
# sanitizer runtimes, hence the INTERFACE link option.
set(ts_fuzz_sanitizers -fsanitize=address,undefined -fno-sanitize-recover=undefined
                       -fno-omit-frame-pointer)
foreach(lib ts_common ts_hlo)
  target_compile_options(${lib} PRIVATE -fsanitize=fuzzer-no-link ${ts_fuzz_sanitizers})
  target_link_options(${lib} INTERFACE -fsanitize=address,undefined)
endforeach()

add_executable(fuzz_parser ${CMAKE_CURRENT_LIST_DIR}/fuzz_parser.c)
target_compile_options(fuzz_parser PRIVATE -fsanitize=fuzzer ${ts_fuzz_sanitizers})
target_link_options(fuzz_parser PRIVATE -fsanitize=fuzzer,address,undefined)
target_link_libraries(fuzz_parser PRIVATE ts_hlo ts_common)

# The hang detector's wire decoder (bytes from the network).
target_compile_options(ts_hang PRIVATE -fsanitize=fuzzer-no-link ${ts_fuzz_sanitizers})
target_link_options(ts_hang INTERFACE -fsanitize=address,undefined)
add_executable(fuzz_hang_msg ${CMAKE_CURRENT_LIST_DIR}/fuzz_hang_msg.c)
target_compile_options(fuzz_hang_msg PRIVATE -fsanitize=fuzzer ${ts_fuzz_sanitizers})
target_link_options(fuzz_hang_msg PRIVATE -fsanitize=fuzzer,address,undefined)
target_link_libraries(fuzz_hang_msg PRIVATE ts_hang ts_common)
