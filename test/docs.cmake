# SPDX-License-Identifier: MIT
# scripts/check-docs.sh: every path and fut_/fut__/FUT_ name the docs
# (README.md, docs/, bench/, apps/*/README.md, test/mc/README.md, the
# opening comments of examples/*.c) quote exists in the tree. In the plain
# build only (the sanitizer builds read the same docs; one verdict is
# enough). Included by test/CMakeLists.txt's glob of test/*.cmake.
if(NOT FUT_ASAN AND NOT FUT_TSAN)
  add_test(NAME check_docs
    COMMAND ${PROJECT_SOURCE_DIR}/scripts/check-docs.sh)
  set_tests_properties(check_docs PROPERTIES TIMEOUT 60)
endif()
