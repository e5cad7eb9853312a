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
