# SPDX-License-Identifier: MIT
fut_check_test(net_echo10k CASES echo10k TIMEOUT 200 BACKENDS)
