# SPDX-License-Identifier: MIT
# examples/chat_fiber.c is compiled into the test (its main renamed) and
# run under simulation with many clients (test/sim_chat.c).
fut_check_test(sim_chat CASES same_seed swarm workers TIMEOUT 120)
target_include_directories(test_sim_chat PRIVATE
  ${PROJECT_SOURCE_DIR}/examples)
