# SPDX-License-Identifier: MIT
fut_check_test(sync_watch CASES basic threads)
