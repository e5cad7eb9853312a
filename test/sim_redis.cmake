# SPDX-License-Identifier: MIT
# apps/fut-redis (its futredis_core library: everything but main.c) under
# simulation, with checking RESP clients (test/sim_redis.c). The app is
# built with the examples.
if(FUT_BUILD_EXAMPLES AND EXISTS ${PROJECT_SOURCE_DIR}/apps/fut-redis)
  fut_check_test(sim_redis CASES same_seed seeds partition workers
    TIMEOUT 240)
  target_link_libraries(test_sim_redis PRIVATE futredis_core)
endif()
