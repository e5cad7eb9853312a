# SPDX-License-Identifier: MIT
fut_check_test(io_blocking CASES pool keepalive fs MT_CASES fs BACKENDS)
