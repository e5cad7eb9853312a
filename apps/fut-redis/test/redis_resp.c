/* SPDX-License-Identifier: MIT */
/* The RESP2 parser and reply writer of fut-redis (apps/fut-redis/resp.c):
 * multibulk and inline commands, requests split at every byte, Redis
 * 7.0's protocol error texts (checked against redis-server 7.0.15), and
 * the reply encodings. */
#include <string.h>

#include "resp.h"
#include "test.h"

static struct resp_limits lim = {RESP_MAX_BULK_DEFAULT,
                                 RESP_INLINE_MAX_DEFAULT};

/* Feeds 'in' in pieces of 'step' bytes; collects the commands as
 * "arg|arg|;" in 'got'. Returns the last status. */
static int feed(const char *in, size_t len, size_t step, char *got,
                size_t cap, const char **err)
{
    struct resp_parser p;
    ck_assert_int_eq(resp_parser_init(&p, &lim), 0);
    size_t done = 0, g = 0;
    int r = RESP_MORE;
    got[0] = '\0';
    while (done < len && r != RESP_ERROR) {
        size_t room;
        char *dst = resp_prepare_read(&p, &room);
        ck_assert_ptr_nonnull(dst);
        size_t n = len - done < step ? len - done : step;
        if (n > room)
            n = room;
        memcpy(dst, in + done, n);
        resp_commit_read(&p, n);
        done += n;
        while ((r = resp_next(&p)) == RESP_CMD) {
            for (size_t i = 0; i < resp_argc(&p); i++) {
                struct resp_arg *a = &resp_argv(&p)[i];
                ck_assert(g + a->len + 2 < cap);
                memcpy(got + g, a->p, a->len);
                g += a->len;
                got[g++] = '|';
            }
            got[g++] = ';';
            got[g] = '\0';
        }
    }
    static char ebuf[128];
    if (r == RESP_ERROR)
        snprintf(ebuf, sizeof ebuf, "%s", resp_error(&p));
    *err = r == RESP_ERROR ? ebuf : NULL;
    resp_parser_fini(&p);
    return r;
}

static void expect(const char *in, const char *want)
{
    char got[1024];
    const char *err;
    for (size_t step = 1; step <= strlen(in); step++) {
        int r = feed(in, strlen(in), step, got, sizeof got, &err);
        ck_assert_msg(r != RESP_ERROR, "error %s", err);
        ck_assert_str_eq(got, want);
    }
}

static void expect_error(const char *in, size_t len, const char *msg)
{
    char got[1024];
    const char *err;
    int r = feed(in, len, len, got, sizeof got, &err);
    ck_assert_int_eq(r, RESP_ERROR);
    ck_assert_str_eq(err, msg);
}

START_TEST(multibulk)
{
    expect("*1\r\n$4\r\nPING\r\n", "PING|;");
    expect("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n*1\r\n$4\r\nPING\r\n",
           "SET|k||;PING|;");
    expect("*0\r\n*-1\r\n*1\r\n$1\r\nx\r\n", "x|;"); /* skipped, as Redis */
    /* binary-safe values */
    char got[64];
    const char *err;
    static const char bin[] = "*1\r\n$3\r\na\0b\r\n";
    feed(bin, sizeof bin - 1, 3, got, sizeof got, &err);
    ck_assert(memcmp(got, "a\0b|;", 5) == 0);
}
END_TEST

START_TEST(inline_cmd)
{
    expect("PING\r\n", "PING|;");
    expect("\r\n\nPING\n", "PING|;");
    expect("set k \"a b\\x41\\n\" 'c\\'d'\r\n", "set|k|a bA\n|c'd|;");
    expect("  get   k  \r\n", "get|k|;");
}
END_TEST

START_TEST(incremental)
{
    /* a big bulk arrives in many reads and ends where it landed */
    size_t n = 3 * RESP_BIG_ARG;
    size_t len = 32 + n;
    char *in = malloc(len);
    int h = snprintf(in, len, "*2\r\n$3\r\nset\r\n$%zu\r\n", n);
    memset(in + h, 'v', n);
    memcpy(in + h + n, "\r\n", 2);
    char *got = malloc(n + 16);
    const char *err;
    ck_assert_int_eq(feed(in, (size_t)h + n + 2, 1000, got, n + 16, &err),
                     RESP_MORE);
    ck_assert_int_eq(got[0], 's');
    ck_assert_int_eq(strlen(got), 4 + n + 2);
    free(in);
    free(got);
}
END_TEST

START_TEST(errors)
{
    /* the texts are redis-server 7.0.15's */
    expect_error("*3000000000\r\n", 13,
                 "Protocol error: invalid multibulk length");
    expect_error("*a\r\n", 4, "Protocol error: invalid multibulk length");
    expect_error("*2\r\n$a\r\n", 8, "Protocol error: invalid bulk length");
    expect_error("*1\r\n$-1\r\n", 9, "Protocol error: invalid bulk length");
    expect_error("*1\r\n$600000000\r\n", 16,
                 "Protocol error: invalid bulk length");
    expect_error("*1\r\nx\r\n", 7, "Protocol error: expected '$', got 'x'");
    expect_error("set \"a\r\n", 8,
                 "Protocol error: unbalanced quotes in request");
    expect_error("set a \"b\"c\r\n", 12,
                 "Protocol error: unbalanced quotes in request");
    size_t n = RESP_INLINE_MAX_DEFAULT + 10;
    char *big = malloc(n);
    memset(big, 'a', n);
    expect_error(big, n, "Protocol error: too big inline request");
    big[0] = '*';
    expect_error(big, n, "Protocol error: too big mbulk count string");
    free(big);
}
END_TEST

START_TEST(replies)
{
    struct resp_out o;
    resp_out_init(&o);
    resp_add_ok(&o);
    resp_add_int(&o, -42);
    resp_add_bulk(&o, "ab", 2);
    resp_add_null(&o);
    resp_add_array(&o, 2);
    resp_add_error(&o, "ERR a\r\nb");
    const char want[] =
        "+OK\r\n:-42\r\n$2\r\nab\r\n$-1\r\n*2\r\n-ERR a  b\r\n";
    ck_assert_int_eq(o.len, sizeof want - 1);
    ck_assert(memcmp(o.buf, want, o.len) == 0);
    resp_out_fini(&o);
    long long v;
    ck_assert(resp_str2ll("-9223372036854775808", 20, &v));
    ck_assert(v == INT64_MIN);
    ck_assert(!resp_str2ll("9223372036854775808", 19, &v));
    ck_assert(!resp_str2ll("01", 2, &v));
    ck_assert(!resp_str2ll("+1", 2, &v));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("redis_resp");
    TCase *tc = fut_test_tcase(s, "multibulk");
    tcase_add_test(tc, multibulk);
    tc = fut_test_tcase(s, "inline");
    tcase_add_test(tc, inline_cmd);
    tc = fut_test_tcase(s, "incremental");
    tcase_add_test(tc, incremental);
    tc = fut_test_tcase(s, "errors");
    tcase_add_test(tc, errors);
    tc = fut_test_tcase(s, "replies");
    tcase_add_test(tc, replies);
    return fut_test_run(s);
}
