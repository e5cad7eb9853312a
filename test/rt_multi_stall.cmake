# SPDX-License-Identifier: MIT
# A busy task stalls nobody else (src/rt/multi/monitor.c). All three
# cases on both backends: on io_uring the busy worker's ring is rescued by
# its peer (src/io/uring/rescue.c, "Rescue"; docs/io.md, "What a busy
# task can delay").
# RUN_SERIAL: the bounds are 10 ms; another test on the other core would
# measure the machine, not the runtime (the test also counts the threads'
# run-queue waits as the machine's share: see rt_multi_stall.c).
fut_check_test(rt_multi_stall CASES timers together echo idle TIMEOUT 60
  BACKENDS)
set_tests_properties(rt_multi_stall.timers rt_multi_stall.together
  rt_multi_stall.echo rt_multi_stall.idle PROPERTIES RUN_SERIAL TRUE)
if(FUT_HAVE_URING)
  set_tests_properties(rt_multi_stall.timers.uring
    rt_multi_stall.together.uring rt_multi_stall.echo.uring
    rt_multi_stall.idle.uring
    PROPERTIES RUN_SERIAL TRUE)
endif()
