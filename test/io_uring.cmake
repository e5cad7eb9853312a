# The io_uring backend's own contracts (test/io_uring.c); exits 77 when the
# kernel cannot give io_uring (the cases show as skipped).
if(FUT_HAVE_URING)
  fut_check_test(io_uring CASES ownership leaks accept multishot faults probe
    MT_CASES ownership leaks accept multishot faults TIMEOUT 180)
  target_compile_definitions(test_io_uring PRIVATE FUT_HAVE_URING)
  set_tests_properties(io_uring.probe PROPERTIES SKIP_RETURN_CODE 77
    LABELS backend_uring)
  foreach(c ownership leaks accept multishot faults)
    set_tests_properties(io_uring.${c} PROPERTIES SKIP_RETURN_CODE 77
      LABELS backend_uring)
    if(FUT_HAVE_MT)
      set_tests_properties(io_uring.${c}.mt PROPERTIES SKIP_RETURN_CODE 77
        LABELS backend_uring)
    endif()
  endforeach()
endif()
