# SPDX-License-Identifier: MIT
fut_check_test(sync_barrier CASES basic threads)
