# SPDX-License-Identifier: MIT
# failalloc_mt also runs as .uring: a multi-thread runtime's rings are set
# up again for the rescue (src/io/uring/rescue.c), and each allocation of that
# must fail as FUT_ENOMEM too; the other cases are not about I/O.
fut_check_test(rt_multi CASES spawn_from_workers wake_while_running
  abort_idle_at_once abort_running join_drop_and_detach spawn_local_affinity
  spawn_local_remote_order
  block_on_threads shutdown_drops_all metrics metrics_budget config_errors
  harness_mt failalloc_mt block_pool TIMEOUT 120
  BACKENDS EPOLL_ONLY spawn_from_workers wake_while_running
  abort_idle_at_once abort_running join_drop_and_detach spawn_local_affinity
  spawn_local_remote_order
  block_on_threads shutdown_drops_all metrics metrics_budget config_errors
  harness_mt block_pool)
