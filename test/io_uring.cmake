# SPDX-License-Identifier: MIT
# The io_uring backend's own contracts (test/io_uring.c); exits 77 when the
# kernel cannot give io_uring (the cases show as skipped).
if(FUT_HAVE_URING)
  # 'probe' runs once: the probe is per process, not per runtime flavour.
  set(uring_cases ownership leaks accept multishot pool faults locality
    record)
  # 'lifecycle' is the multi-thread runtime's (its rings' rescue): .mt only.
  fut_check_test(io_uring CASES ${uring_cases} probe
    MT_CASES ${uring_cases} lifecycle TIMEOUT 180)
  target_compile_definitions(test_io_uring PRIVATE FUT_HAVE_URING)
  set(uring_tests io_uring.probe)
  if(FUT_HAVE_MT)
    list(APPEND uring_tests io_uring.lifecycle.mt)
  endif()
  foreach(c ${uring_cases})
    list(APPEND uring_tests io_uring.${c})
    if(FUT_HAVE_MT)
      list(APPEND uring_tests io_uring.${c}.mt)
    endif()
  endforeach()
  set_tests_properties(${uring_tests} PROPERTIES SKIP_RETURN_CODE 77
    LABELS backend_uring)
endif()
