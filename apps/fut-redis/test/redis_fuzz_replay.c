/* SPDX-License-Identifier: MIT */
/* The fuzz target (fuzz/fuzz_target.c) in every build configuration:
 *   corpus     every seed input and every regression input (crashes the
 *              fuzzer found, kept in fuzz/regressions) runs cleanly
 *   mutations  20,000 inputs made from the seeds by byte flips, inserts,
 *              deletions and splices (xorshift, fixed seed: the same
 *              inputs every run), for the builds without libFuzzer
 * A crash, sanitizer report or leak fails the case. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct input {
    uint8_t *p;
    size_t n;
};

static size_t load_dir(const char *dir, struct input *in, size_t max)
{
    DIR *d = opendir(dir);
    ck_assert_msg(d != NULL, "%s", dir);
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < max) {
        if (e->d_name[0] == '.')
            continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        FILE *f = fopen(path, "rb");
        ck_assert_ptr_nonnull(f);
        fseek(f, 0, SEEK_END);
        long len = ftell(f);
        fseek(f, 0, SEEK_SET);
        in[n].p = malloc((size_t)len + 1);
        in[n].n = fread(in[n].p, 1, (size_t)len, f);
        fclose(f);
        n++;
    }
    closedir(d);
    return n;
}

static void free_inputs(struct input *in, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(in[i].p);
}

START_TEST(corpus)
{
    static struct input in[512];
    size_t n = load_dir(FUZZ_CORPUS, in, 512);
    ck_assert_uint_ge(n, 30);
    n += load_dir(FUZZ_REGRESSIONS, in + n, 512 - n);
    for (size_t i = 0; i < n; i++)
        LLVMFuzzerTestOneInput(in[i].p, in[i].n);
    free_inputs(in, n);
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

/* One mutation of 'a' (spliced with 'b' sometimes) into 'out'. */
static size_t mutate(const struct input *a, const struct input *b,
                     uint8_t *out, size_t cap)
{
    size_t n = a->n < cap ? a->n : cap;
    memcpy(out, a->p, n);
    for (int k = (int)(next() % 4) + 1; k > 0 && n > 0; k--) {
        size_t at = next() % n;
        switch (next() % 5) {
        case 0:
            out[at] ^= (uint8_t)(1u << (next() % 8));
            break;
        case 1:
            out[at] = "*$\r\n-:0123456789"[next() % 16];
            break;
        case 2: /* delete a run */
        {
            size_t len = next() % (n - at) + 1;
            memmove(out + at, out + at + len, n - at - len);
            n -= len;
        } break;
        case 3: /* duplicate a run */
        {
            size_t len = next() % (n - at) + 1;
            if (n + len <= cap) {
                memmove(out + at + len, out + at, n - at);
                n += len;
            }
        } break;
        default: /* splice: the tail of 'b' */
        {
            size_t from = b->n ? next() % b->n : 0;
            size_t len = b->n - from;
            if (at + len > cap)
                len = cap - at;
            memcpy(out + at, b->p + from, len);
            n = at + len;
        }
        }
    }
    return n;
}

START_TEST(mutations)
{
    static struct input in[512];
    size_t n = load_dir(FUZZ_CORPUS, in, 512);
    ck_assert_uint_ge(n, 30);
    static uint8_t buf[128 * 1024];
    int iters = TEST_ITERS(20000, 4000);
    for (int i = 0; i < iters; i++) {
        size_t len =
            mutate(&in[next() % n], &in[next() % n], buf, sizeof buf);
        LLVMFuzzerTestOneInput(buf, len);
    }
    free_inputs(in, n);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("redis_fuzz_replay");
    tcase_add_test(fut_test_tcase(s, "corpus"), corpus);
    tcase_add_test(fut_test_tcase(s, "mutations"), mutations);
    return fut_test_run(s);
}
