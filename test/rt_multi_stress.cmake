# SPDX-License-Identifier: MIT
fut_check_test(rt_multi_stress CASES wake_run_abort_drop spawn_storm_shutdown
  local_pingpong park_spin_hits park_spin_decay
  park_spin_rules park_spin_adapt
  TIMEOUT 300)
