# SPDX-License-Identifier: MIT
fut_check_test(net_misc CASES udp unix pipe signal MT_CASES udp unix signal BACKENDS)
