# SPDX-License-Identifier: MIT
# The tree's own checks, run as CTest tests in the plain build only (the
# sanitizer builds compile the same sources; one verdict is enough):
#   check_format   scripts/check-format.sh: every C/C++ file as clang-format
#                  14 writes it (.clang-format), every source file with
#                  its SPDX line
#   check_abi      scripts/check-abi.sh: libfut.so's ABI equals
#                  abi/libfut.abi. The reference is gcc's x86_64 build with
#                  io_uring, so the test exists in such builds only.
#   check_results  bench/results.py --check: bench/RESULTS.md and
#                  bench/history/runs.md are what bench/runs/ makes.
if(NOT FUT_ASAN AND NOT FUT_TSAN)
  add_test(NAME check_format
    COMMAND ${PROJECT_SOURCE_DIR}/scripts/check-format.sh)
  set_tests_properties(check_format PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77)
  if(CMAKE_C_COMPILER_ID STREQUAL "GNU" AND FUT_HAVE_URING
     AND CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
    add_test(NAME check_abi
      COMMAND ${PROJECT_SOURCE_DIR}/scripts/check-abi.sh $<TARGET_FILE:fut>)
    set_tests_properties(check_abi PROPERTIES TIMEOUT 120)
  endif()
  find_package(Python3 COMPONENTS Interpreter QUIET)
  if(Python3_FOUND)
    add_test(NAME check_results
      COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/bench/results.py --check)
    set_tests_properties(check_results PROPERTIES TIMEOUT 60)
  endif()
endif()
