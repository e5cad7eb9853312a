# SPDX-License-Identifier: MIT
# scripts/check-layers.sh on the objects of this build (libfut's and the
# adapters' built, FUT_ADAPTER_OBJECTS): no circle between
# the files of src/, no call or include that climbs the layer order of
# docs/architecture.md (the adapters' objects too: FUT_ADAPTER_OBJECTS,
# cmake/curl.cmake). In the plain build only (the sanitizer builds
# compile the same sources; one verdict is enough).
if(NOT FUT_ASAN AND NOT FUT_TSAN)
  add_test(NAME check_layers
    COMMAND ${PROJECT_SOURCE_DIR}/scripts/check-layers.sh
            $<TARGET_OBJECTS:fut_obj> ${FUT_ADAPTER_OBJECTS}
            $<$<BOOL:${FUT_HAVE_TLS}>:$<TARGET_OBJECTS:fut_tls_obj>>
    COMMAND_EXPAND_LISTS)
  set_tests_properties(check_layers PROPERTIES TIMEOUT 120)
endif()

# scripts/check-atomics.sh: every atomic of src/ goes through
# src/util/atomic.h (the model checker swaps that header alone). A source
# check, so in the plain build only as check_layers.
if(NOT FUT_ASAN AND NOT FUT_TSAN)
  add_test(NAME check_atomics
    COMMAND ${PROJECT_SOURCE_DIR}/scripts/check-atomics.sh
            ${PROJECT_SOURCE_DIR}/src)
  set_tests_properties(check_atomics PROPERTIES TIMEOUT 60)
endif()
