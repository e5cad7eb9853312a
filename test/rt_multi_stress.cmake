fut_check_test(rt_multi_stress CASES wake_run_abort_drop spawn_storm_shutdown
  local_pingpong park_spin_hits park_spin_decay
  TIMEOUT 300)
