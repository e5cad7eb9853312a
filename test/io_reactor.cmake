fut_check_test(io_reactor CASES forced race register MT_CASES race)
