# SPDX-License-Identifier: MIT
# Graceful shutdown of examples/echo_server with 1,000 open connections
# (fut_shutdown over a task scope): all closed, exit 0, no leak, within
# the grace period. Needs the examples (the server binary).
if(FUT_BUILD_EXAMPLES)
  fut_check_test(net_shutdown CASES echo1000 MT_CASES echo1000 TIMEOUT 120 BACKENDS)
  target_compile_definitions(test_net_shutdown PRIVATE
    FUT_ECHO_SERVER="$<TARGET_FILE:echo_server>")
  add_dependencies(test_net_shutdown echo_server)
endif()
