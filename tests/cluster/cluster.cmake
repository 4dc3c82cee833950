# Multi-host tests (label multihost): an emulated cluster of 4 hosts
# (network namespaces joined by a userspace relay, tests/cluster/cluster.sh)
# brought up once as a fixture, and `tessera run` jobs and faults across its
# hosts. Root only: without namespaces, TAP devices or root every test
# skips (77). The tests share one cluster and its links, so they hold one
# resource lock and run one at a time.
add_executable(ts_cluster_relay ${CMAKE_CURRENT_SOURCE_DIR}/cluster/relay.c)
set(ts_cluster_sh ${CMAKE_CURRENT_SOURCE_DIR}/cluster/cluster.sh)
# One name per build folder: two builds on one machine never share a cluster.
string(MD5 ts_cluster_hash "${CMAKE_BINARY_DIR}")
string(SUBSTRING "${ts_cluster_hash}" 0 6 ts_cluster_hash)
set(ts_cluster tsc${ts_cluster_hash})

add_test(NAME multihost.cluster_up
         COMMAND sh -c "${ts_cluster_sh} can || exit 77; ${ts_cluster_sh} down ${ts_cluster}; ${ts_cluster_sh} up ${ts_cluster} 4")
add_test(NAME multihost.cluster_down COMMAND ${ts_cluster_sh} down ${ts_cluster})
set_tests_properties(multihost.cluster_up PROPERTIES FIXTURES_SETUP ts_cluster)
set_tests_properties(multihost.cluster_down PROPERTIES FIXTURES_CLEANUP ts_cluster)
set(ts_cluster_tests multihost.cluster_up multihost.cluster_down)

# ts_cluster_test(NAME SCRIPT ARGS...): a test on the fixture's cluster.
function(ts_cluster_test name script)
  add_test(NAME ${name} COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cluster/${script} ${ts_cluster} ${ARGN})
  set_tests_properties(${name} PROPERTIES FIXTURES_REQUIRED ts_cluster)
  set(ts_cluster_tests ${ts_cluster_tests} ${name} PARENT_SCOPE)
endfunction()

set(mlp ${CMAKE_SOURCE_DIR}/examples/mlp_train.hlo)
set(transformer ${CMAKE_SOURCE_DIR}/examples/transformer_train.hlo)
find_package(MPI COMPONENTS C QUIET)
# Jobs: the MLP and the transformer on 2 hosts x 2 ranks and 4 hosts x 1,
# under mpirun (mpi, ucx) and with --task_id/--num_nodes/--address (tcp);
# one slice per host, so the hierarchical collectives cross the relay (the
# MLP on 2x2 under mpi also checks its trace says so).
set(ts_cluster_modes tcp)
if(MPI_C_FOUND)
  set(ts_cluster_modes mpi ucx tcp)
endif()
foreach(mode ${ts_cluster_modes})
  foreach(shape "2 2" "4 1")
    string(REPLACE " " "x" tag "${shape}")
    separate_arguments(shape)
    set(trace)
    if(mode STREQUAL mpi AND tag STREQUAL 2x2)
      set(trace --trace ${CMAKE_CURRENT_BINARY_DIR}/multihost_mlp_trace.json)
    endif()
    ts_cluster_test(multihost.mlp.${mode}.${tag} check_job.sh ${shape} ${mode} $<TARGET_FILE:tessera>
                    --steps 3 --loop ${trace} ${mlp})
    ts_cluster_test(multihost.transformer.${mode}.${tag} check_job.sh ${shape} ${mode} $<TARGET_FILE:tessera>
                    ${transformer})
  endforeach()
endforeach()
if(MPI_C_FOUND)
  # Faults from outside the program, on 4 hosts x 1 rank.
  foreach(f cut freeze kill blip)
    ts_cluster_test(multihost.fault.${f} check_fault.sh ${f} $<TARGET_FILE:tessera> ${mlp})
  endforeach()
endif()

set_tests_properties(${ts_cluster_tests} PROPERTIES LABELS multihost SKIP_RETURN_CODE 77 TIMEOUT 300
                     RESOURCE_LOCK ts_cluster ENVIRONMENT TS_CLUSTER_RELAY=$<TARGET_FILE:ts_cluster_relay>)
