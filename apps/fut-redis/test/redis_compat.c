/* SPDX-License-Identifier: MIT */
/* fut-redis side by side with redis-server 7.0: test/compat.redis (every
 * command fut-redis has, its error cases and wrong types, expiry lazy
 * and active, pub/sub with a second client) is sent through redis-cli to
 * both servers, and the outputs must be byte-identical, segment by
 * segment, except the segments the script marks '#differs' (INFO
 * contents, millisecond TTLs, COMMAND's table: run on both to show they
 * answer, not compared).
 *   raw    redis-cli's raw output (what a script sees)
 *   typed  redis-cli --no-raw: reply types shown ("(integer) 1", "(nil)")
 *          so an empty string and a nil, or "1" and :1, differ
 * The .mt variant runs fut-redis with --workers 2. Skips (77) when
 * redis-server or redis-cli is missing. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "test.h"

struct side {
    struct srvproc srv;
    const char *name;
    pid_t sub; /* the subscriber's redis-cli, or 0 */
    char sub_out[300];
};

struct run {
    struct side s[2]; /* redis-server, fut-redis */
    const char *mode; /* "--raw" or "--no-raw" */
    int segment;
    char seg[64 * 1024];
    size_t seg_len;
    int differs;  /* the segment being collected is not compared */
    int compared; /* segments compared */
};

static size_t count_lines(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

/* The first line where 'a' and 'b' differ, for the failure message. */
static void first_diff(const char *a, const char *b, char *msg, size_t cap)
{
    size_t line = 1;
    const char *la = a, *lb = b;
    while (*a && *a == *b) {
        if (*a == '\n') {
            line++;
            la = a + 1;
            lb = b + 1;
        }
        a++;
        b++;
    }
    snprintf(msg, cap, "line %zu: redis '%.*s' vs fut-redis '%.*s'", line,
             (int)strcspn(la, "\n"), la, (int)strcspn(lb, "\n"), lb);
}

static void compare(struct run *r, const char *what, const char *pa,
                    const char *pb)
{
    char *a = harness_slurp(pa, NULL), *b = harness_slurp(pb, NULL);
    if (strcmp(a, b) != 0) {
        char msg[1024];
        first_diff(a, b, msg, sizeof msg);
        ck_abort_msg("%s %d differs (%s; files %s %s): %s", what, r->segment,
                     r->mode, pa, pb, msg);
    }
    ck_assert_msg(strlen(a) > 0 || r->seg_len == 0, "%s %d: no output", what,
                  r->segment);
    free(a);
    free(b);
    r->compared++;
}

/* Runs the collected lines through redis-cli on both servers. */
static void flush_segment(struct run *r)
{
    if (r->seg_len == 0)
        return;
    const char *dir = harness_dir();
    char in[300], out[2][300];
    snprintf(in, sizeof in, "%s/seg%d.in", dir, r->segment);
    FILE *f = fopen(in, "w");
    ck_assert_ptr_nonnull(f);
    fwrite(r->seg, 1, r->seg_len, f);
    fclose(f);
    for (int i = 0; i < 2; i++) {
        snprintf(out[i], sizeof out[i], "%s/seg%d.%s.out", dir, r->segment,
                 r->s[i].name);
        int st = harness_sh("redis-cli -s %s %s < %s > %s 2>&1",
                            r->s[i].srv.sock, r->mode, in, out[i]);
        ck_assert_msg(st == 0, "redis-cli exit %d on %s, segment %d", st,
                      r->s[i].name, r->segment);
    }
    if (!r->differs)
        compare(r, "segment", out[0], out[1]);
    r->differs = 0;
    r->seg_len = 0;
    r->segment++;
}

/* '#subscribe ARGS': a second client per server, left running. */
static void subscribe(struct run *r, const char *args)
{
    size_t nargs = 0;
    for (const char *p = args; *p;) {
        p += strspn(p, " ");
        if (*p)
            nargs++;
        p += strcspn(p, " ");
    }
    for (int i = 0; i < 2; i++) {
        struct side *s = &r->s[i];
        snprintf(s->sub_out, sizeof s->sub_out, "%s/sub%d.%s.out",
                 harness_dir(), r->segment, s->name);
        fclose(fopen(s->sub_out, "w")); /* exists before the child runs */
        char cmd[1024];
        snprintf(cmd, sizeof cmd, "exec redis-cli -s %s %s %s > %s 2>&1",
                 s->srv.sock, r->mode, args, s->sub_out);
        s->sub = fork();
        ck_assert_int_ge(s->sub, 0);
        if (s->sub == 0) {
            execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
            _exit(127);
        }
        /* subscribed once it printed a 3-line confirmation per name (the
         * first word is the command) */
        for (int ms = 0;; ms += 10) {
            char *o = harness_slurp(s->sub_out, NULL);
            size_t lines = count_lines(o);
            free(o);
            if (lines >= 3 * (nargs - 1))
                break;
            ck_assert_msg(ms < HARNESS_WAIT_MS, "subscriber on %s silent",
                          s->name);
            usleep(10000);
        }
    }
}

static void endsub(struct run *r)
{
    usleep(300000); /* the last messages reach the subscribers */
    for (int i = 0; i < 2; i++) {
        kill(r->s[i].sub, SIGTERM);
        waitpid(r->s[i].sub, NULL, 0);
        r->s[i].sub = 0;
    }
    compare(r, "subscriber before segment", r->s[0].sub_out, r->s[1].sub_out);
}

static void directive(struct run *r, const char *line)
{
    if (line[1] == '#')
        return; /* a comment */
    flush_segment(r);
    if (!strncmp(line, "#sleep ", 7))
        usleep((useconds_t)atoi(line + 7) * 1000);
    else if (!strcmp(line, "#differs"))
        r->differs = 1;
    else if (!strcmp(line, "#segment"))
        ; /* only a boundary */
    else if (!strncmp(line, "#subscribe ", 11))
        subscribe(r, line + 11);
    else if (!strcmp(line, "#endsub"))
        endsub(r);
    else
        ck_abort_msg("unknown directive %s", line);
}

static void run_script(const char *mode)
{
    static struct run r;
    memset(&r, 0, sizeof r);
    r.mode = mode;
    r.s[0].name = "redis";
    r.s[1].name = "fut";
    redis_server_start(&r.s[0].srv, "redis.sock");
    fut_redis_start(&r.s[1].srv, "fut.sock", NULL);
    char *script = harness_slurp(COMPAT_SCRIPT, NULL);
    for (char *line = strtok(script, "\n"); line; line = strtok(NULL, "\n")) {
        if (line[0] == '#') {
            directive(&r, line);
            continue;
        }
        size_t n = strlen(line);
        ck_assert(r.seg_len + n + 1 < sizeof r.seg);
        memcpy(r.seg + r.seg_len, line, n);
        r.seg_len += n;
        r.seg[r.seg_len++] = '\n';
    }
    flush_segment(&r);
    free(script);
    ck_assert_int_ge(r.compared, 8);
    ck_assert_int_eq(srv_stop(&r.s[1].srv), 0);
    srv_stop(&r.s[0].srv);
    harness_cleanup();
}

START_TEST(raw)
{
    run_script("--raw");
}
END_TEST

START_TEST(typed)
{
    run_script("--no-raw");
}
END_TEST

int main(void)
{
    static const char *const progs[] = {"redis-server", "redis-cli", NULL};
    harness_require(progs);
    Suite *s = suite_create("redis_compat");
    TCase *tc = fut_test_tcase(s, "raw");
    tcase_add_test(tc, raw);
    tc = fut_test_tcase(s, "typed");
    tcase_add_test(tc, typed);
    return fut_test_run(s);
}
