# SPDX-License-Identifier: MIT
fut_check_test(sync_mutex CASES mutex rwlock)
