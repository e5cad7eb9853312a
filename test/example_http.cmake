# examples/http_hello, run as a child process (test/example_harness.c).
# Needs the example built; the soak runs 20 s (its timeout leaves room for
# a loaded machine).
if(FUT_BUILD_EXAMPLES)
  fut_check_test(example_http
    SOURCES example_harness.c
    CASES pipeline_1000 lf_only slowloris_head_deadline
          keepalive_idle_deadline idle_rss garbage_400_close sigterm_exit_0
          soak_20s
    MT_CASES pipeline_1000 lf_only slowloris_head_deadline
             keepalive_idle_deadline idle_rss garbage_400_close
             sigterm_exit_0 soak_20s
    TIMEOUT 90)
  add_dependencies(test_example_http http_hello)
  target_compile_definitions(test_example_http PRIVATE
    HTTP_HELLO_BIN="$<TARGET_FILE:http_hello>")
  if(FUT_ASAN)
    target_compile_definitions(test_example_http PRIVATE FUT_TEST_ASAN)
  endif()
  # Under TSan only the server is instrumented: the client (this test)
  # is not what is tested, and instrumented it stalled its own poll loop
  # (soak p99 315 ms, max 3 s, against 4.7 ms / 15 ms for the same TSan
  # server driven by the uninstrumented client).
  if(FUT_TSAN)
    target_compile_options(test_example_http PRIVATE -fno-sanitize=thread)
  endif()
endif()
