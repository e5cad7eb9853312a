# SPDX-License-Identifier: MIT
fut_check_test(io_reactor CASES forced race register driver MT_CASES race driver
  BACKENDS EPOLL_ONLY forced race register driver)
