# SPDX-License-Identifier: MIT
# debug_checks exists only where the library checks its contracts
# (FUT_DEBUG: Debug builds or FUT_DEBUG_CHECKS); elsewhere test/core_task.c
# does not add the case, and a case that runs nothing fails.
set(core_task_cases spawn cancel coop threads shutdown waker version)
set(core_task_vg_cases spawn cancel coop threads shutdown waker)
if(FUT_DEBUG_CHECKS OR CMAKE_BUILD_TYPE STREQUAL "Debug")
  list(APPEND core_task_cases debug_checks)
  list(APPEND core_task_vg_cases debug_checks)
endif()
fut_check_test(core_task
  CASES ${core_task_cases}
  MT_CASES spawn cancel threads waker
  VALGRIND_CASES ${core_task_vg_cases})
