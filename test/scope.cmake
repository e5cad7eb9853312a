# SPDX-License-Identifier: MIT
# Task scopes (C16): join, records, no child outliving its scope (idle,
# woken during the cancel, running on the other worker), FAIL_FAST and
# SUPERVISE, nested scopes, spawns from children, foreign cancel, token,
# stream, drop at every PENDING, fut_shutdown dropped after it completed.
set(SCOPE_CASES join_basic drop_idle drop_running woken_during_cancel
  fail_fast supervise nested3 spawn_tree cancel_foreign token_graceful
  stream harness dump rounds_reuse_memory shutdown_drop)
fut_check_test(scope CASES ${SCOPE_CASES} MT_CASES ${SCOPE_CASES}
  TIMEOUT 120)
