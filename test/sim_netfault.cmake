# SPDX-License-Identifier: MIT
# The simulated network's faults (test/sim_netfault.c): a listener's
# backlog, a host crash and restart with clients reconnecting, the
# swarm's socket faults (spurious EAGAIN, resets) and its failure line.
fut_check_test(sim_netfault CASES backlog crash_restart socket_faults
  swarm_line TIMEOUT 120)
