fut_check_test(core_stream
  CASES array end_stays_end adaptors consumers pending c8 harness failalloc)
