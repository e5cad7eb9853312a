# SPDX-License-Identifier: MIT
# Unix stream sockets under simulation (test/sim_unix.c): an echo server
# at a path, one trace per seed; paths per host, taken while listened
# on, gone with a crash; socket pairs and Unix datagram sockets (pairs,
# pair_crash).
fut_check_test(sim_unix CASES echo namespace pairs pair_crash TIMEOUT 120
  SOURCES sim_scaffold.c)
