# SPDX-License-Identifier: MIT
fut_check_test(sync_notify CASES basic threads)
