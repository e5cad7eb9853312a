# SPDX-License-Identifier: MIT
fut_check_test(core_cell
  CASES cell oneshot race_complete_vs_poll race_complete_vs_complete
        race_take_vs_take race_oneshot
  VALGRIND_CASES cell oneshot)
