# SPDX-License-Identifier: MIT
# examples/chat_fiber.c is compiled into the test (its main renamed) and
# run under simulation with many clients (test/sim_chat.c).
fut_check_test(sim_chat CASES same_seed swarm workers builds TIMEOUT 120)
target_include_directories(test_sim_chat PRIVATE
  ${PROJECT_SOURCE_DIR}/examples)
# builds: each build of scripts/test-all.sh (build-test/<name>) writes its
# traces next to the others' and compares them (test/sim_apps.h).
target_compile_definitions(test_sim_chat PRIVATE
  FUT_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
get_filename_component(_sim_build "${CMAKE_BINARY_DIR}" NAME)
set_property(TEST sim_chat.builds APPEND PROPERTY ENVIRONMENT
  "FUT_SIM_TRACE_DIR=${CMAKE_BINARY_DIR}/../sim-traces"
  "FUT_SIM_BUILD=${_sim_build}")
