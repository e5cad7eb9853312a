# SPDX-License-Identifier: MIT
fut_check_test(core_combinators
  CASES join select select_fair map_then c8 harness
  VALGRIND_CASES join select map_then c8 harness)
