# SPDX-License-Identifier: MIT
# libfut_pq (cmake/pq.cmake), when it is built: against a PostgreSQL 15
# cluster the test makes and starts itself (initdb, pg_ctl; one cluster
# per test process, stopped by a watchdog however the process ends). An
# I/O area: every case on epoll and io_uring, on both flavors. Exit 77
# (skip) without PostgreSQL 15's binaries.
if(NOT FUT_HAVE_PQ)
  return()
endif()
set(pq_cases queries conns notify dropped killed)
if(FUT_BUILD_EXAMPLES)
  list(APPEND pq_cases example)
endif()
fut_check_test(pq CASES ${pq_cases} MT_CASES ${pq_cases} BACKENDS
  TIMEOUT 180)
target_link_libraries(test_pq PRIVATE fut_pq_static)
# The template cluster the test processes copy (test/pq.c, template_copy).
target_compile_definitions(test_pq PRIVATE
  FUT_PQ_TEMPLATE="${CMAKE_CURRENT_BINARY_DIR}/pq-template-15")
if(FUT_BUILD_EXAMPLES)
  target_compile_definitions(test_pq PRIVATE
    FUT_PG_EXAMPLE="$<TARGET_FILE:pg_fibers>")
  add_dependencies(test_pq pg_fibers)
else()
  target_compile_definitions(test_pq PRIVATE FUT_PG_EXAMPLE="")
endif()
get_property(tests DIRECTORY PROPERTY TESTS)
foreach(t IN LISTS tests)
  if(t MATCHES "^pq\\.")
    set_tests_properties(${t} PROPERTIES SKIP_RETURN_CODE 77)
  endif()
endforeach()
