# SPDX-License-Identifier: MIT
fut_check_test(core_harness
  CASES counts catches_leak errors async_example drain failalloc
        failalloc_spawn
  MT_CASES errors failalloc_spawn
  VALGRIND_CASES counts async_example failalloc)
