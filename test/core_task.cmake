# SPDX-License-Identifier: MIT
fut_check_test(core_task
  CASES spawn cancel coop threads shutdown waker debug_checks version
  MT_CASES spawn cancel threads waker
  VALGRIND_CASES spawn cancel coop threads shutdown waker debug_checks)
