# SPDX-License-Identifier: MIT
# The libcurl adapter (cmake/curl.cmake) against nginx started by each
# case (test/curl.c): registered only when the adapter is built. Every
# case on both backends and both runtime flavors.
if(NOT FUT_HAVE_CURL)
  return()
endif()
find_program(FUT_NGINX nginx PATHS /usr/sbin /sbin)
if(NOT FUT_NGINX)
  message(STATUS "fut: curl tests need nginx (Debian: apt-get install nginx-light): not registered")
  return()
endif()
set(curl_cases bulk_http bulk_https bulk_h2 redirect drop stall ratelimit refused
  free_order bad_input)
# examples/fetch (added by examples/CMakeLists.txt after this file).
if(FUT_BUILD_EXAMPLES)
  list(APPEND curl_cases example_fetch)
endif()
fut_check_test(curl CASES ${curl_cases} MT_CASES ${curl_cases} BACKENDS
  TIMEOUT 120)
target_link_libraries(test_curl PRIVATE fut_curl_static)
target_compile_definitions(test_curl PRIVATE FUT_TEST_NGINX="${FUT_NGINX}")
if(FUT_BUILD_EXAMPLES)
  add_dependencies(test_curl fetch)
  target_compile_definitions(test_curl PRIVATE
    FUT_TEST_FETCH_BIN="$<TARGET_FILE:fetch>")
endif()
