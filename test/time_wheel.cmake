# SPDX-License-Identifier: MIT
fut_check_test(time_wheel CASES order cancel far)
