# SPDX-License-Identifier: MIT
# A busy task stalls nobody else (src/rt/multi/monitor.c), on epoll. Not
# on io_uring's per-worker rings (explicit FUT_IO_URING; AUTO gives the
# multi-thread runtime epoll): an fd's completions are reaped by the
# worker whose ring it is on, so a connection of the busy worker's ring
# waits for it, and in this test the timers were late too - the driving
# worker's ring wait overslept its timeout by 26 ms to 2.3 s while the
# other worker spun (docs/io.md, "What a busy task can delay").
# RUN_SERIAL: the bounds are 10 ms; another test on the other core would
# measure the machine, not the runtime.
fut_check_test(rt_multi_stall CASES timers echo TIMEOUT 60)
set_tests_properties(rt_multi_stall.timers rt_multi_stall.echo
  PROPERTIES RUN_SERIAL TRUE)
