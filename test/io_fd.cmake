# SPDX-License-Identifier: MIT
fut_check_test(io_fd
  CASES readable clear writable hup deregister left_alone drop fiber bad closed_before race
  MT_CASES readable clear writable hup deregister left_alone drop fiber bad closed_before race
  BACKENDS)
