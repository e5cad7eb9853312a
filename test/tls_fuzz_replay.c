/* SPDX-License-Identifier: MIT */
/* libfut-tls's fuzz target (test/fuzz_tls_target.c) in every build:
 *   corpus     every seed input (test/fuzz/tls: ClientHellos captured
 *              from `openssl s_client` - TLS 1.3, TLS 1.2, ALPN and SNI,
 *              a P-384 key share -, plain HTTP, three bytes) runs cleanly
 *   mutations  every seed cut at every length (a truncated record or
 *              handshake message each), and inputs with bytes flipped or
 *              replaced at random (xorshift, fixed seed: the same inputs
 *              every run; fewer under TSan), for the builds without
 *              libFuzzer
 * The target aborts when the server hangs (its 5 s deadline) or leaves
 * an allocation; a crash or sanitizer report fails the case too. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
void tls_fuzz_teardown(void);

struct seed {
    uint8_t p[4096];
    size_t n;
};

static size_t load_seeds(struct seed *s, size_t max)
{
    DIR *d = opendir(FUZZ_CORPUS);
    ck_assert_msg(d != NULL, "%s", FUZZ_CORPUS);
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < max) {
        if (e->d_name[0] == '.')
            continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", FUZZ_CORPUS, e->d_name);
        FILE *f = fopen(path, "rb");
        ck_assert_ptr_nonnull(f);
        s[n].n = fread(s[n].p, 1, sizeof s[n].p, f);
        fclose(f);
        n++;
    }
    closedir(d);
    return n;
}

static struct seed seeds[32];

START_TEST(corpus)
{
    size_t n = load_seeds(seeds, 32);
    ck_assert_uint_ge(n, 8);
    for (size_t i = 0; i < n; i++)
        LLVMFuzzerTestOneInput(seeds[i].p, seeds[i].n);
    tls_fuzz_teardown();
}
END_TEST

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

START_TEST(mutations)
{
    size_t n = load_seeds(seeds, 32);
    ck_assert_uint_ge(n, 8);
    /* every cut of every seed (step 7 under TSan) */
    size_t step = TEST_ITERS(1, 7);
    for (size_t i = 0; i < n; i++)
        for (size_t len = 1; len < seeds[i].n; len += step)
            LLVMFuzzerTestOneInput(seeds[i].p, len);
    /* flips and replacements, 1 to 4 per input */
    uint8_t buf[4096];
    for (int k = 0; k < TEST_ITERS(3000, 300); k++) {
        const struct seed *s = &seeds[next() % n];
        memcpy(buf, s->p, s->n);
        for (int m = (int)(next() % 4) + 1; m > 0 && s->n > 1; m--) {
            size_t at = 1 + next() % (s->n - 1);
            if (next() % 2)
                buf[at] ^= (uint8_t)(1u << (next() % 8));
            else
                buf[at] = (uint8_t)next();
        }
        LLVMFuzzerTestOneInput(buf, s->n);
    }
    tls_fuzz_teardown();
}
END_TEST

int main(void)
{
    Suite *s = suite_create("tls_fuzz_replay");
    tcase_add_test(fut_test_tcase(s, "corpus"), corpus);
    tcase_add_test(fut_test_tcase(s, "mutations"), mutations);
    return fut_test_run(s);
}
