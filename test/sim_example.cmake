# SPDX-License-Identifier: MIT
# examples/echo_server.c is compiled into the test (its main renamed).
fut_check_test(sim_example CASES echo_server SOURCES sim_scaffold.c)
target_include_directories(test_sim_example PRIVATE
  ${PROJECT_SOURCE_DIR}/examples)
