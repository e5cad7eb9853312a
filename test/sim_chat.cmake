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
# A build directory straight under the sources (build/) keeps its traces
# inside itself, so nothing is written into the source tree.
get_filename_component(_sim_build "${CMAKE_BINARY_DIR}" NAME)
get_filename_component(_sim_parent "${CMAKE_BINARY_DIR}" DIRECTORY)
if(_sim_parent STREQUAL PROJECT_SOURCE_DIR)
  set(_sim_traces "${CMAKE_BINARY_DIR}/sim-traces")
else()
  set(_sim_traces "${_sim_parent}/sim-traces")
endif()
set_property(TEST sim_chat.builds APPEND PROPERTY ENVIRONMENT
  "FUT_SIM_TRACE_DIR=${_sim_traces}"
  "FUT_SIM_BUILD=${_sim_build}")
