# SPDX-License-Identifier: MIT
# TLS (libfut-tls) against real OpenSSL peers: only when the build has
# TLS (FUT_TLS, top-level CMakeLists.txt). The test program spawns the
# openssl command (certificates, s_client, s_server). TIMEOUT 300: the
# drop loops make a runtime and a handshake per drop point, which a loaded
# 2-core machine under ASan has taken 95 s for (the cancel case).
if(FUT_HAVE_TLS)
  fut_check_test(tls
    CASES echo alpn close verify resume s_client s_server bad_input cancel
      keyop many duplex
    MT_CASES echo s_server cancel keyop many duplex
    BACKENDS TIMEOUT 300)
  target_link_libraries(test_tls PRIVATE fut_tls_static)
  target_include_directories(test_tls PRIVATE ${OPENSSL_INCLUDE_DIRS})
  if(FUT_ASAN)
    target_compile_definitions(test_tls PRIVATE FUT_TEST_ASAN)
  endif()
endif()

# The fuzz target of the server side (test/fuzz_tls_target.c) over its
# seed corpus and mutations of it, in every build with TLS; and, in the
# ASan build with clang, the libFuzzer program tls_fuzz run for
# FUT_TLS_FUZZ_SECONDS as the test tls_fuzz.run (as fut-redis's
# redis_fuzz.run): new inputs go to the build tree, crashes to
# tls-fuzz-artifacts/ there.
set(FUT_TLS_FUZZ_SECONDS 60 CACHE STRING "tls_fuzz.run: seconds")
if(FUT_HAVE_TLS)
  set(TLS_FUZZ_CORPUS ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/tls)
  fut_check_test(tls_fuzz_replay CASES corpus mutations
    SOURCES fuzz_tls_target.c TIMEOUT 600)
  target_link_libraries(test_tls_fuzz_replay PRIVATE fut_tls_static)
  target_compile_definitions(test_tls_fuzz_replay PRIVATE
    FUZZ_CORPUS="${TLS_FUZZ_CORPUS}")
  if(CMAKE_C_COMPILER_ID MATCHES "Clang" AND FUT_ASAN)
    # libfut-tls's sources are compiled into it (not linked from
    # fut_tls_static) so that libFuzzer sees their coverage; OpenSSL's
    # is not seen (the system's library).
    list(TRANSFORM FUT_TLS_SOURCES PREPEND ${PROJECT_SOURCE_DIR}/
      OUTPUT_VARIABLE tls_fuzz_sources)
    add_executable(tls_fuzz fuzz_tls_target.c ${tls_fuzz_sources})
    target_compile_options(tls_fuzz PRIVATE ${FUT_WARNINGS}
      -fsanitize=fuzzer)
    target_link_options(tls_fuzz PRIVATE -fsanitize=fuzzer)
    target_compile_definitions(tls_fuzz PRIVATE _GNU_SOURCE)
    target_include_directories(tls_fuzz PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}
      ${PROJECT_SOURCE_DIR}/src ${OPENSSL_INCLUDE_DIRS})
    target_link_libraries(tls_fuzz PRIVATE fut_static ${OPENSSL_LINK_LIBRARIES})
    set(work ${CMAKE_CURRENT_BINARY_DIR}/tls-fuzz-corpus)
    set(art ${CMAKE_CURRENT_BINARY_DIR}/tls-fuzz-artifacts/)
    file(MAKE_DIRECTORY ${work} ${art})
    add_test(NAME tls_fuzz.run COMMAND tls_fuzz
      -max_total_time=${FUT_TLS_FUZZ_SECONDS} -timeout=20
      -rss_limit_mb=2048 -max_len=16384 -artifact_prefix=${art}
      -print_final_stats=1 ${work} ${TLS_FUZZ_CORPUS})
    math(EXPR tls_fuzz_timeout "${FUT_TLS_FUZZ_SECONDS} + 120")
    set_tests_properties(tls_fuzz.run PROPERTIES TIMEOUT ${tls_fuzz_timeout})
  endif()
endif()
