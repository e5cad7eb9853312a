# SPDX-License-Identifier: MIT
# The misuse test: its NULL-argument table is generated from the public
# headers at build time (test/misuse/gen_api_null.py), so a function the
# headers gain is tested without being listed anywhere.
find_package(Python3 REQUIRED COMPONENTS Interpreter)
file(GLOB FUT_PUBLIC_HEADERS CONFIGURE_DEPENDS
  ${PROJECT_SOURCE_DIR}/include/fut/*.h)
set(api_null_c ${CMAKE_CURRENT_BINARY_DIR}/api_null_cases.c)
# fut/tls.h is in only when libfut-tls is built (FUT_TLS).
if(FUT_HAVE_TLS)
  set(api_null_tls "")
else()
  set(api_null_tls notls)
endif()
add_custom_command(OUTPUT ${api_null_c}
  COMMAND Python3::Interpreter ${CMAKE_CURRENT_SOURCE_DIR}/misuse/gen_api_null.py
    ${PROJECT_SOURCE_DIR}/include ${CMAKE_CURRENT_SOURCE_DIR}/misuse/api_null.txt
    ${api_null_c} ${api_null_tls}
  DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/misuse/gen_api_null.py
    ${CMAKE_CURRENT_SOURCE_DIR}/misuse/api_null.txt ${FUT_PUBLIC_HEADERS}
  COMMENT "Generating the NULL-argument cases from include/fut/*.h")
set(api_misuse_cases null_args lifetime)
if(FUT_DEBUG_CHECKS OR CMAKE_BUILD_TYPE STREQUAL "Debug")
  list(APPEND api_misuse_cases debug_aborts)
endif()
fut_check_test(api_misuse CASES ${api_misuse_cases} SOURCES ${api_null_c}
  TIMEOUT 300)
target_include_directories(test_api_misuse PRIVATE
  ${CMAKE_CURRENT_SOURCE_DIR}/misuse)
if(FUT_HAVE_TLS)
  target_link_libraries(test_api_misuse PRIVATE fut_tls_static)
endif()
# The generated calls pass stand-in pointers of every type: no warnings
# about what a call with a zeroed block would mean.
set_source_files_properties(${api_null_c} PROPERTIES COMPILE_OPTIONS
  "-Wno-nonnull;-Wno-cast-function-type;-Wno-incompatible-pointer-types")
