# SPDX-License-Identifier: MIT
# The simulation's swarm, invariants and seeded faults (fut/sim.h): no
# I/O besides a temporary file, one flavor (a simulation is one thread).
fut_check_test(sim_swarm CASES primitives lost_update shutdown_loss half_reply
  invariant faults teardown_spawn workers TIMEOUT 120)
