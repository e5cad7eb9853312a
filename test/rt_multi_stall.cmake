# SPDX-License-Identifier: MIT
# A busy task stalls nobody else (src/rt/multi/monitor.c). timers and
# together on both backends (the monitor keeps the timers driven on
# io_uring's per-worker rings too; the stuck detection takes what is
# queued behind the busy task). echo on epoll only: on io_uring an fd's
# completions are reaped by the worker whose ring it is on (DEFER_TASKRUN),
# so a connection - or the listener - of the busy worker's ring waits for
# it (docs/io.md, "What a busy task can delay"); AUTO gives the
# multi-thread runtime epoll for this reason.
# RUN_SERIAL: the bounds are 10 ms; another test on the other core would
# measure the machine, not the runtime (the test also counts the threads'
# run-queue waits as the machine's share: see rt_multi_stall.c).
fut_check_test(rt_multi_stall CASES timers together echo TIMEOUT 60
  BACKENDS EPOLL_ONLY echo)
set_tests_properties(rt_multi_stall.timers rt_multi_stall.together
  rt_multi_stall.echo PROPERTIES RUN_SERIAL TRUE)
if(FUT_HAVE_URING)
  set_tests_properties(rt_multi_stall.timers.uring
    rt_multi_stall.together.uring PROPERTIES RUN_SERIAL TRUE)
endif()
