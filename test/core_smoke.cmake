fut_check_test(core_smoke CASES smoke)
