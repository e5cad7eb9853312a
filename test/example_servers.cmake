# SPDX-License-Identifier: MIT
# The example servers, each run as a child process by its test
# (test/example_harness.c, shared): example_http drives examples/http_hello,
# example_echo drives examples/echo_server. Both need the examples built,
# as does example_cmdline (every example's command line, and fut-redis').
#
# fut_example_test(<area> <example target> <macro> CASES... ) registers
# test/<area>.c with the path of the example in <macro>, every case also
# as .mt (the server started with --workers 2).
function(fut_example_test area target macro)
  fut_check_test(${area} SOURCES example_harness.c
    CASES ${ARGN} MT_CASES ${ARGN} TIMEOUT 90 BACKENDS
    URING_ONLY uring_faults)
  add_dependencies(test_${area} ${target})
  target_compile_definitions(test_${area} PRIVATE
    ${macro}="$<TARGET_FILE:${target}>")
  if(FUT_ASAN)
    target_compile_definitions(test_${area} PRIVATE FUT_TEST_ASAN)
  endif()
  # Under TSan only the server is instrumented: the client (the test) is
  # not what is tested, and instrumented it stalled its own poll loop
  # (soak p99 315 ms, max 3 s, against 4.7 ms / 15 ms for the same TSan
  # server driven by the uninstrumented client).
  if(FUT_TSAN)
    target_compile_options(test_${area} PRIVATE -fno-sanitize=thread)
  endif()
endfunction()

if(FUT_BUILD_EXAMPLES)
  fut_example_test(example_http http_hello HTTP_HELLO_BIN
    pipeline_1000 lf_only slowloris_head_deadline keepalive_idle_deadline
    idle_rss garbage_400_close methods_501 sigterm_exit_0 soak_20s)
  fut_example_test(example_echo echo_server ECHO_SERVER_BIN
    echo_roundtrip idle_deadline idle_rss sigterm_exit_0)

  # example_cmdline: --help and bad arguments of every example program
  # and of fut-redis (apps/), one case per program.
  fut_check_test(example_cmdline CASES echo_server http_hello echo_fiber
    chat_fiber tour fut_redis TIMEOUT 120)
  set(progs echo_server http_hello echo_fiber chat_fiber tour fut-redis)
  add_dependencies(test_example_cmdline ${progs})
  foreach(p IN LISTS progs)
    string(TOUPPER "${p}_BIN" macro)
    string(REPLACE "-" "_" macro "${macro}")
    target_compile_definitions(test_example_cmdline PRIVATE
      ${macro}="$<TARGET_FILE:${p}>")
  endforeach()
endif()
