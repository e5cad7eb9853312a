# SPDX-License-Identifier: MIT
fut_check_test(rt_multi_fair CASES ready_task_no_starve
  lifo_stolen_from_blocked pingpong_no_starve_global idle_cpu TIMEOUT 120)
# The same steal with the owner's LIFO take on a locked swap (what a
# kernel without membarrier gets; src/platform/membarrier.c).
add_test(NAME rt_multi_fair.lifo_stolen_from_blocked.no_membarrier
         COMMAND test_rt_multi_fair)
set_tests_properties(rt_multi_fair.lifo_stolen_from_blocked.no_membarrier
  PROPERTIES ENVIRONMENT
  "CK_RUN_CASE=lifo_stolen_from_blocked;CK_DEFAULT_TIMEOUT=120;FUT_NO_MEMBARRIER=1"
  TIMEOUT 180)
