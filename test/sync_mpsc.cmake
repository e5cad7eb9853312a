# SPDX-License-Identifier: MIT
fut_check_test(sync_mpsc CASES basic drop cancel_load stress_cap1 stress_cap16
               stress_cap1024 stress_runtimes
               MT_CASES stress_runtimes
               TIMEOUT 400)
