# SPDX-License-Identifier: MIT
fut_check_test(core_stream
  CASES array end_stays_end adaptors consumers pending c8 harness failalloc
  VALGRIND_CASES array adaptors consumers harness failalloc)
