# SPDX-License-Identifier: MIT
# check_doxygen: scripts/check-doxygen.sh - doxygen over the public
# headers with warnings as errors (docs/Doxyfile.in: WARN_IF_UNDOCUMENTED),
# so a public function, type, macro or struct member without a doc
# comment, or a broken doxygen command, fails; and a header without a
# \file block (whose declarations doxygen would skip silently) fails.
# Into a scratch directory of its own (not the 'docs' target's output).
# In the plain build only (the sanitizer builds have the same headers;
# one verdict is enough), when doxygen is found (cmake/docs.cmake).
if(NOT FUT_ASAN AND NOT FUT_TSAN AND DOXYGEN_FOUND)
  set(FUT_DOXY_WARN_AS_ERROR ${FUT_DOXY_WARN_AS_ERROR_STRICT})
  set(FUT_DOXY_OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/doxygen-check)
  configure_file(${PROJECT_SOURCE_DIR}/docs/Doxyfile.in
    ${FUT_DOXY_OUTPUT}/Doxyfile @ONLY)
  add_test(NAME check_doxygen
    COMMAND ${PROJECT_SOURCE_DIR}/scripts/check-doxygen.sh
            ${DOXYGEN_EXECUTABLE} ${FUT_DOXY_OUTPUT}/Doxyfile ${FUT_DOXY_OUTPUT})
  set_tests_properties(check_doxygen PROPERTIES TIMEOUT 120)
endif()
