/* SPDX-License-Identifier: MIT */
/* The install check's libfut-tls consumer (test/install/check.sh): makes
 * a client and a server context through the installed fut/tls.h and
 * libfut-tls, and a stream over one end of a socket pair. Exit 0 = ok. */
#include <fut.h>
#include <fut/tls.h>

int main(void)
{
    struct fut_tls_ctx *c = 0, *s = 0;
    struct fut_io *a = 0, *b = 0;
    struct fut_tls *t = 0;
    int bad = fut_tls_ctx_new(FUT_TLS_CLIENT, &c) != 0 ||
              fut_tls_ctx_new(FUT_TLS_SERVER, &s) != 0 ||
              fut_unix_pair(SOCK_STREAM, &a, &b) != 0 ||
              fut_tls_new(c, a, "localhost", &t) != 0 ||
              fut_tls_is_handshake_done(t) != 0;
    fut_tls_free(t);
    fut_io_close(a);
    fut_io_close(b);
    fut_tls_ctx_free(s);
    fut_tls_ctx_free(c);
    return bad || fut_alloc_live() != 0;
}
