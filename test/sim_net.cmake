# SPDX-License-Identifier: MIT
fut_check_test(sim_net CASES echo_same_seed echo_seeds_differ latency refused
  reset partition closes teardown
  chaos SOURCES sim_scaffold.c)
