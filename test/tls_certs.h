/* SPDX-License-Identifier: MIT */
/* Test certificates for the TLS tests (test/tls.c, test/example_https.c):
 * made at start-up with `openssl req` into a temporary directory. */
#ifndef FUT_TEST_TLS_CERTS_H
#define FUT_TEST_TLS_CERTS_H

#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

/* Runs a shell command; its exit status (-1: it did not exit). */
static inline int tls_run_quiet(const char *cmd)
{
    int r = system(cmd);
    return WIFEXITED(r) ? WEXITSTATUS(r) : -1;
}

/* A self-signed certificate for "localhost" and 127.0.0.1 (it is its own
 * CA: trust it to verify it), key 'newkey' ("-newkey rsa:2048", ...);
 * 'extra': more SANs (",DNS:a,DNS:b"), to make it big. 0 or nonzero. */
static inline int tls_make_cert(const char *newkey, const char *crt,
                                const char *key, const char *extra)
{
    static char cmd[24000];
    snprintf(cmd, sizeof cmd,
             "openssl req -x509 %s -nodes -keyout %s -out %s -days 2 "
             "-subj /CN=localhost "
             "-addext subjectAltName=DNS:localhost,IP:127.0.0.1%s "
             ">/dev/null 2>&1",
             newkey, key, crt, extra ? extra : "");
    return tls_run_quiet(cmd);
}

/* Removes the directory 'dir' and what is in it ("" : nothing). */
static inline void tls_remove_dir(const char *dir)
{
    char cmd[128];
    if (dir[0]) {
        snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
        (void)tls_run_quiet(cmd);
    }
}

#endif /* FUT_TEST_TLS_CERTS_H */
