# SPDX-License-Identifier: MIT
fut_check_test(sim CASES same_seed seeds_differ virtual_time check
  seed_search blocking select teardown deadlock refusals)
