# Collectives (collectives/): the threads backend in-process (unit), and
# mpirun launches that check the whole matrix per backend and rank count (mpi).
add_library(ts_coll_matrix STATIC ${CMAKE_CURRENT_SOURCE_DIR}/coll/coll_matrix.c)
target_link_libraries(ts_coll_matrix PUBLIC ts_coll ts_common)

add_executable(test_coll_threads coll/test_coll_threads.c)
target_include_directories(test_coll_threads PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(test_coll_threads PRIVATE ts_coll_matrix ts_coll)
add_test(NAME coll.threads COMMAND test_coll_threads)
set_tests_properties(coll.threads PROPERTIES LABELS unit TIMEOUT 300)

# The pipelined hierarchical collectives: slice layouts, counts, the same
# bits on every member; once with the built-in chunks, once with 1 KiB ones
# (many chunks, short and padded last ones).
add_executable(test_coll_hier coll/test_coll_hier.c)
target_include_directories(test_coll_hier PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(test_coll_hier PRIVATE ts_coll)
add_test(NAME coll.hier COMMAND test_coll_hier)
add_test(NAME coll.hier.chunks COMMAND test_coll_hier)
set_tests_properties(coll.hier coll.hier.chunks PROPERTIES LABELS unit TIMEOUT 300)
set_tests_properties(coll.hier.chunks PROPERTIES ENVIRONMENT TESSERA_COLL_HIER_CHUNK_KIB=1)

find_package(MPI COMPONENTS C QUIET)
if(MPI_C_FOUND)
  add_executable(test_coll_mpi coll/test_coll_mpi.c)
  target_include_directories(test_coll_mpi PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
  target_link_libraries(test_coll_mpi PRIVATE ts_coll_matrix ts_coll MPI::MPI_C)
  set(coll_mpirun sh ${CMAKE_CURRENT_SOURCE_DIR}/coll/mpirun.sh)
  # The MPI backend with the same-host direct path (shared memory + CMA),
  # then with point-to-point only (Open MPI Isend/Irecv under our algorithms).
  foreach(np 2 3 4 8)
    set(q)
    if(np EQUAL 8)
      set(q --quick)
    endif()
    add_test(NAME coll.mpi.np${np} COMMAND ${coll_mpirun} ${np} $<TARGET_FILE:test_coll_mpi> --backend=mpi ${q})
    set_tests_properties(coll.mpi.np${np} PROPERTIES LABELS mpi TIMEOUT 300)
  endforeach()
  foreach(np 2 3 4)
    add_test(NAME coll.mpi.p2p.np${np} COMMAND ${coll_mpirun} ${np} $<TARGET_FILE:test_coll_mpi> --backend=mpi --quick)
    set_tests_properties(coll.mpi.p2p.np${np} PROPERTIES LABELS mpi TIMEOUT 300 ENVIRONMENT TESSERA_COLL_DIRECT=0)
  endforeach()
  # Buffers from ts_coll_alloc: the mapped direct paths (every rank, and
  # mixed with malloc'd buffers); with tiny thresholds, streaming stores and
  # the mapped path at eager sizes too.
  foreach(np 2 3 4)
    add_test(NAME coll.mpi.alloc.np${np} COMMAND ${coll_mpirun} ${np} $<TARGET_FILE:test_coll_mpi> --backend=mpi --quick --alloc=1)
    set_tests_properties(coll.mpi.alloc.np${np} PROPERTIES LABELS mpi TIMEOUT 300)
  endforeach()
  add_test(NAME coll.mpi.alloc.mixed.np4 COMMAND ${coll_mpirun} 4 $<TARGET_FILE:test_coll_mpi> --backend=mpi --quick --alloc=2)
  set_tests_properties(coll.mpi.alloc.mixed.np4 PROPERTIES LABELS mpi TIMEOUT 300)
  foreach(np 2 3)
    add_test(NAME coll.mpi.alloc.small.np${np} COMMAND ${coll_mpirun} ${np} $<TARGET_FILE:test_coll_mpi> --backend=mpi --quick --alloc=1)
    set_tests_properties(coll.mpi.alloc.small.np${np} PROPERTIES LABELS mpi TIMEOUT 300
                         ENVIRONMENT "TESSERA_COLL_NT_KIB=1;TESSERA_COLL_STAGE_BYTES=0")
  endforeach()
  add_test(NAME coll.mpi.alloc.mixed.small.np3 COMMAND ${coll_mpirun} 3 $<TARGET_FILE:test_coll_mpi> --backend=mpi --quick --alloc=2)
  set_tests_properties(coll.mpi.alloc.mixed.small.np3 PROPERTIES LABELS mpi TIMEOUT 300
                       ENVIRONMENT "TESSERA_COLL_NT_KIB=1;TESSERA_COLL_STAGE_BYTES=0")
  # Two slices: the hierarchical algorithms against the flat results.
  foreach(np 4 8)
    add_test(NAME coll.mpi.slices.np${np} COMMAND ${coll_mpirun} ${np} $<TARGET_FILE:test_coll_mpi> --backend=mpi --quick --slices=2)
    set_tests_properties(coll.mpi.slices.np${np} PROPERTIES LABELS mpi TIMEOUT 300)
  endforeach()
  add_test(NAME coll.mpi.slices.p2p.np4 COMMAND ${coll_mpirun} 4 $<TARGET_FILE:test_coll_mpi> --backend=mpi --quick --slices=2)
  set_tests_properties(coll.mpi.slices.p2p.np4 PROPERTIES LABELS mpi TIMEOUT 300 ENVIRONMENT TESSERA_COLL_DIRECT=0)
  add_test(NAME coll.mpi.slices.alloc.np4 COMMAND ${coll_mpirun} 4 $<TARGET_FILE:test_coll_mpi> --backend=mpi --quick --alloc=1 --slices=2)
  set_tests_properties(coll.mpi.slices.alloc.np4 PROPERTIES LABELS mpi TIMEOUT 300)
  add_test(NAME coll.mpi.deadline.alloc COMMAND ${coll_mpirun} 4 $<TARGET_FILE:test_coll_mpi> --backend=mpi --deadline --alloc=1)
  set_tests_properties(coll.mpi.deadline.alloc PROPERTIES LABELS mpi TIMEOUT 60)
  add_test(NAME coll.mpi.deadline COMMAND ${coll_mpirun} 4 $<TARGET_FILE:test_coll_mpi> --backend=mpi --deadline)
  set_tests_properties(coll.mpi.deadline PROPERTIES LABELS mpi TIMEOUT 60)
  add_test(NAME coll.mpi.deadline.p2p COMMAND ${coll_mpirun} 4 $<TARGET_FILE:test_coll_mpi> --backend=mpi --deadline)
  set_tests_properties(coll.mpi.deadline.p2p PROPERTIES LABELS mpi TIMEOUT 60 ENVIRONMENT "TESSERA_COLL_DIRECT=0;TESSERA_COLL_SHM=0")
endif()

# tessera bench collectives: runs for a few small sizes in seconds (never a
# timed assertion), and its usage errors exit 2 with one clear line.
add_test(NAME bench-smoke.collectives.threads
         COMMAND tessera bench collectives --devices 3 -b 1K -e 64K -f 8 -n 3 -w 1)
set_tests_properties(bench-smoke.collectives.threads PROPERTIES LABELS bench-smoke TIMEOUT 60
                     PASS_REGULAR_EXPRESSION "# Out of bounds values : 0 OK")
add_test(NAME bench-smoke.collectives.slices
         COMMAND tessera bench collectives --devices 4 --slices=2 --collectives=all-reduce,all-gather,reduce-scatter
                 -b 1K -e 64K -f 8 -n 3 -w 1)
set_tests_properties(bench-smoke.collectives.slices PROPERTIES LABELS bench-smoke TIMEOUT 60
                     PASS_REGULAR_EXPRESSION "# Out of bounds values : 0 OK")
if(MPI_C_FOUND)
  add_test(NAME bench-smoke.collectives.mpi
           COMMAND ${coll_mpirun} 2 $<TARGET_FILE:tessera> bench collectives --backend=mpi --peer=mpi --memcpy
                   -b 4K -e 256K -f 8 -n 3 -w 1)
  set_tests_properties(bench-smoke.collectives.mpi PROPERTIES LABELS bench-smoke TIMEOUT 60
                       PASS_REGULAR_EXPRESSION "# Out of bounds values : 0 OK")
endif()
ts_cli_test(bench_no_benchmark 2 "tessera bench: error: no benchmark given (benchmarks: collectives)" bench)
ts_cli_test(bench_unknown_benchmark 2 "tessera bench: error: unknown benchmark 'gemm' (benchmarks: collectives)" bench gemm)
ts_cli_test(bench_bad_backend 2 "tessera bench: error: unknown backend 'tcp' (backends: threads, mpi, ucx, nccl)" bench collectives --backend=tcp)
ts_cli_test(bench_bad_size 2 "tessera bench: error: -b wants a positive size such as 4K, got '0'" bench collectives -b 0)
ts_cli_test(bench_min_above_max 2 "tessera bench: error: -b is larger than -e" bench collectives -b 2M -e 1M)
ts_cli_test(bench_bad_factor 2 "tessera bench: error: -f wants an integer factor >= 2, got '1'" bench collectives -f 1)
ts_cli_test(bench_bad_collective 2 "tessera bench: error: unknown collective 'allreduce' (all-reduce, all-gather, reduce-scatter, all-to-all, collective-permute, broadcast)" bench collectives --collectives=all-reduce,allreduce)
ts_cli_test(bench_bad_devices 2 "tessera bench: error: --devices wants an integer from 1 to 1024, got '0'" bench collectives --devices 0)
ts_cli_test(bench_bad_type 2 "tessera bench: error: unknown or unsupported type 'f33' (f32, f64, bf16, f16, f8e4m3fn, s8..s64, u8..u64)" bench collectives -d f33)
ts_cli_test(bench_peer_threads 2 "tessera bench: error: --peer=mpi needs the mpirun world (--backend=mpi or ucx), not in-process ranks" bench collectives --devices 2 --peer=mpi)
ts_cli_test(bench_bad_slices 2 "tessera bench: error: --slices=3 does not divide the 4 ranks" bench collectives --devices 4 --slices=3)
ts_cli_test(bench_bad_algorithm 2 "tessera bench: error: unknown algorithm 'tree' (ring, recursive-doubling, direct, direct-eager, pairwise, bruck, hierarchical, binomial, p2p)" bench collectives --algorithm=tree)
ts_cli_test(bench_missing_value 2 "tessera bench: error: option '-n' needs a value" bench collectives -n)
ts_cli_test(bench_unknown_option 2 "tessera bench: error: unknown option '--frob'" bench collectives --frob)

# The TCP rendezvous + UCX data path, forked processes (no mpirun).
add_executable(test_coll_tcp coll/test_coll_tcp.c)
target_include_directories(test_coll_tcp PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(test_coll_tcp PRIVATE ts_coll_matrix ts_coll)
add_test(NAME coll.tcp.ucx COMMAND test_coll_tcp)
set_tests_properties(coll.tcp.ucx PROPERTIES LABELS unit TIMEOUT 120 SKIP_RETURN_CODE 77)
if(MPI_C_FOUND)
  foreach(np 2 3 4)
    add_test(NAME coll.ucx.np${np} COMMAND ${coll_mpirun} ${np} $<TARGET_FILE:test_coll_mpi> --backend=ucx --quick)
    set_tests_properties(coll.ucx.np${np} PROPERTIES LABELS mpi TIMEOUT 300)
  endforeach()
  add_test(NAME coll.ucx.p2p.np4 COMMAND ${coll_mpirun} 4 $<TARGET_FILE:test_coll_mpi> --backend=ucx --quick)
  set_tests_properties(coll.ucx.p2p.np4 PROPERTIES LABELS mpi TIMEOUT 300 ENVIRONMENT TESSERA_COLL_DIRECT=0)
  add_test(NAME coll.ucx.deadline COMMAND ${coll_mpirun} 3 $<TARGET_FILE:test_coll_mpi> --backend=ucx --deadline)
  set_tests_properties(coll.ucx.deadline PROPERTIES LABELS mpi TIMEOUT 60 ENVIRONMENT "TESSERA_COLL_DIRECT=0;TESSERA_COLL_SHM=0")
endif()
if(TESSERA_SANITIZE)
  # sanitizer builds run the matrix's quick subset (the full one takes minutes there)
  set_tests_properties(coll.threads PROPERTIES ENVIRONMENT TS_COLL_QUICK=1)
  # Open MPI leaks at exit (not ours): no leak checks in the mpirun launches
  if(MPI_C_FOUND)
    get_property(coll_tests DIRECTORY PROPERTY TESTS)
    foreach(t ${coll_tests})
      if(t MATCHES "^(coll\\.(mpi|ucx)\\.|bench-smoke\\.collectives\\.mpi)")
        set_property(TEST ${t} APPEND PROPERTY ENVIRONMENT ASAN_OPTIONS=detect_leaks=0)
      endif()
    endforeach()
  endif()
endif()
