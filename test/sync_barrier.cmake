fut_check_test(sync_barrier CASES basic threads)
