# SPDX-License-Identifier: MIT
# TLS (libfut-tls) against real OpenSSL peers: only when the build has
# TLS (FUT_TLS, top-level CMakeLists.txt). The test program spawns the
# openssl command (certificates, s_client, s_server).
if(FUT_HAVE_TLS)
  fut_check_test(tls
    CASES echo alpn close verify resume s_client s_server bad_input cancel
      duplex
    MT_CASES echo s_server cancel duplex
    BACKENDS)
  target_link_libraries(test_tls PRIVATE fut_tls_static)
  target_include_directories(test_tls PRIVATE ${OPENSSL_INCLUDE_DIRS})
endif()
