# SPDX-License-Identifier: MIT
# UDP under simulation (test/sim_udp.c): a retrying request/response
# client under seeded loss, duplication and reordering over many seeds,
# every datagram accounted for; one trace per seed; partitions, crashes,
# connected sockets and the errors.
fut_check_test(sim_udp CASES retry same_seed rules TIMEOUT 120)
