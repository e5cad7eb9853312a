# SPDX-License-Identifier: MIT
# libfut-hiredis (cmake/hiredis.cmake), when it is built: against
# redis-server and, when the apps are built, fut-redis - both started by
# the test (apps/fut-redis/test/harness.c). An I/O area: every case on
# epoll and io_uring, on both flavors. Exit 77 (skip) without
# redis-server.
if(NOT FUT_HAVE_HIREDIS)
  return()
endif()
set(hiredis_cases commands pipelined pubsub dropped killed refused)
fut_check_test(hiredis CASES ${hiredis_cases} MT_CASES ${hiredis_cases}
  BACKENDS SOURCES ${PROJECT_SOURCE_DIR}/apps/fut-redis/test/harness.c
  TIMEOUT 120)
target_link_libraries(test_hiredis PRIVATE fut_hiredis_static)
target_include_directories(test_hiredis PRIVATE
  ${PROJECT_SOURCE_DIR}/apps/fut-redis/test)
if(FUT_BUILD_EXAMPLES AND EXISTS ${PROJECT_SOURCE_DIR}/apps/CMakeLists.txt)
  target_compile_definitions(test_hiredis PRIVATE
    FUT_REDIS_BIN="$<TARGET_FILE:fut-redis>")
  add_dependencies(test_hiredis fut-redis)
else()
  target_compile_definitions(test_hiredis PRIVATE FUT_REDIS_BIN="")
endif()
get_property(tests DIRECTORY PROPERTY TESTS)
foreach(t IN LISTS tests)
  if(t MATCHES "^hiredis\\.")
    set_tests_properties(${t} PROPERTIES SKIP_RETURN_CODE 77)
  endif()
endforeach()
