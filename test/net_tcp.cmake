# SPDX-License-Identifier: MIT
fut_check_test(net_tcp CASES echo connect stream backoff faults cancel
  MT_CASES backoff cancel BACKENDS EPOLL_ONLY backoff faults)
