# SPDX-License-Identifier: MIT
# A link's bandwidth under simulation (test/sim_bandwidth.c): 1 MB over
# TCP at 1 MB/s takes about 1 s of virtual time, unlimited a few window
# round trips; UDP datagrams spaced by the link; one trace per seed.
fut_check_test(sim_bandwidth CASES tcp udp same_seed TIMEOUT 120)
