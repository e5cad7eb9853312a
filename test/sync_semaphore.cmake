# SPDX-License-Identifier: MIT
fut_check_test(sync_semaphore CASES basic drop load)
