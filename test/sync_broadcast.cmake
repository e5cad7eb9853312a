# SPDX-License-Identifier: MIT
fut_check_test(sync_broadcast CASES basic threads)
