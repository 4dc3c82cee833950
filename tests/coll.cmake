# Collectives (collectives/): the threads backend in-process (unit), and
# mpirun launches that check the whole matrix per backend and rank count (mpi).
add_library(ts_coll_matrix STATIC ${CMAKE_CURRENT_SOURCE_DIR}/coll/coll_matrix.c)
target_link_libraries(ts_coll_matrix PUBLIC ts_coll ts_hlo ts_common)

add_executable(test_coll_threads coll/test_coll_threads.c)
target_include_directories(test_coll_threads PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(test_coll_threads PRIVATE ts_coll_matrix ts_coll)
add_test(NAME coll.threads COMMAND test_coll_threads)
set_tests_properties(coll.threads PROPERTIES LABELS unit TIMEOUT 300)
