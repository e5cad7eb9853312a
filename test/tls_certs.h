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

/* A certificate for "localhost" and 127.0.0.1 that expired in 2020:
 * 'ca' (self-signed, valid now) signs 'crt' (key 'key') with a validity
 * of 2020-01-01 .. 2020-01-02, through `openssl ca -startdate -enddate`
 * (OpenSSL 3.0's x509 command cannot set a past start date). Files are
 * made in 'dir'. 0 or nonzero. */
static inline int tls_make_expired_cert(const char *dir, const char *ca,
                                        const char *crt, const char *key)
{
    static char cmd[4096];
    snprintf(
        cmd, sizeof cmd,
        "(cd %s && mkdir -p expca && cd expca && : > index.txt && "
        "echo 01 > serial && "
        "printf '[ca]\\ndefault_ca=d\\n[d]\\ndatabase=index.txt\\n"
        "new_certs_dir=.\\nserial=serial\\ndefault_md=sha256\\n"
        "policy=p\\nx509_extensions=e\\n[p]\\ncommonName=supplied\\n"
        "[e]\\nsubjectAltName=DNS:localhost,IP:127.0.0.1\\n' > ca.cnf && "
        "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 "
        "-nodes -keyout ca.key -out %s -days 2 -subj /CN=fut-test-ca && "
        "openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 "
        "-nodes -keyout %s -out leaf.csr -subj /CN=localhost && "
        "openssl ca -batch -config ca.cnf -cert %s -keyfile ca.key "
        "-in leaf.csr -out %s -notext -startdate 20200101000000Z "
        "-enddate 20200102000000Z) >/dev/null 2>&1",
        dir, ca, key, ca, crt);
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
