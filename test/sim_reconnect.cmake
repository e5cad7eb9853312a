# SPDX-License-Identifier: MIT
# A seeded bug on the simulated network (test/sim_reconnect.c): a
# reconnect loop that never recovers after a partition heals, found by the
# swarm and replayed from its seed; the fixed loop passes 1,000 seeds.
fut_check_test(sim_reconnect CASES found TIMEOUT 120)
