# SPDX-License-Identifier: MIT
# Cancel tokens (C17): flag, wait future, child tokens, 4-thread races,
# fut_until_cancelled (drop where it stood, drop at every PENDING).
fut_check_test(cancel CASES basic children race_4_threads until_cancelled
  until_inner_first until_harness
  MT_CASES race_4_threads until_cancelled TIMEOUT 120)
