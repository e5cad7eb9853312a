# SPDX-License-Identifier: MIT
# The long-poll watchdog (src/rt/watchdog.c): reports while the poll runs,
# the names (fibers, scope children), the task dump during a long poll.
fut_check_test(rt_watchdog CASES report names dump
  MT_CASES report names dump TIMEOUT 120)
