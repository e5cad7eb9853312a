# examples/http_hello, run as a child process (test/example_harness.c).
# Needs the example built.
if(FUT_BUILD_EXAMPLES)
  fut_check_test(example_http
    SOURCES example_harness.c
    CASES pipeline_1000 lf_only slowloris_head_deadline
          keepalive_idle_deadline idle_rss garbage_400_close sigterm_exit_0
    MT_CASES pipeline_1000 lf_only slowloris_head_deadline
             keepalive_idle_deadline idle_rss garbage_400_close
             sigterm_exit_0
    TIMEOUT 90)
  add_dependencies(test_example_http http_hello)
  target_compile_definitions(test_example_http PRIVATE
    HTTP_HELLO_BIN="$<TARGET_FILE:http_hello>")
  if(FUT_ASAN)
    target_compile_definitions(test_example_http PRIVATE FUT_TEST_ASAN)
  endif()
endif()
