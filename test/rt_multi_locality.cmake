# SPDX-License-Identifier: MIT
# I/O where the task is with the shared driver (epoll): a dry worker takes
# the driver before it steals (src/rt/multi/worker.c, may_steal). A count
# of polls, not a time. RUN_SERIAL: a test on the other core would delay
# the workers' turns and change what is counted.
fut_check_test(rt_multi_locality CASES epoll TIMEOUT 120)
set_tests_properties(rt_multi_locality.epoll PROPERTIES RUN_SERIAL TRUE)
