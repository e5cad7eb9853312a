# SPDX-License-Identifier: MIT
# examples/https_hello (and the client example https_get) driven by
# test/example_https.c (with
# test/example_harness.c, as example_http drives http_hello): only when
# the build has the examples and TLS (FUT_TLS).
if(FUT_BUILD_EXAMPLES AND FUT_HAVE_TLS)
  set(cases keepalive bad_input sigterm_exit_0 tools client)
  fut_check_test(example_https SOURCES example_harness.c
    CASES ${cases} MT_CASES ${cases} TIMEOUT 90 BACKENDS)
  add_dependencies(test_example_https https_hello https_get)
  target_compile_definitions(test_example_https PRIVATE
    HTTPS_HELLO_BIN="$<TARGET_FILE:https_hello>"
    HTTPS_GET_BIN="$<TARGET_FILE:https_get>")
  target_link_libraries(test_example_https PRIVATE fut_tls_static)
  if(FUT_ASAN)
    target_compile_definitions(test_example_https PRIVATE FUT_TEST_ASAN)
  endif()
  # nginx with TLS for the client example (test/curl.cmake finds it too;
  # the test command installs nginx-light).
  find_program(FUT_NGINX nginx PATHS /usr/sbin /sbin)
  if(FUT_NGINX)
    target_compile_definitions(test_example_https PRIVATE
      FUT_TEST_NGINX="${FUT_NGINX}")
  else()
    message(STATUS "fut: example_https.client runs without nginx (not found)")
  endif()
endif()
