# SPDX-License-Identifier: MIT
fut_check_test(time_sleep CASES sleep timeout paused interval million harness
  MT_CASES sleep timeout interval BACKENDS)
