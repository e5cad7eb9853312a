/* SPDX-License-Identifier: MIT */
/* libfut-hiredis (include/fut/hiredis.h) against redis-server and against
 * apps/fut-redis, each started here on a Unix socket of a fresh directory
 * and stopped after (apps/fut-redis/test/harness.c): commands, 10,000
 * pipelined, pub/sub as a stream (in order, a slow consumer's bound,
 * UNSUBSCRIBE on drop), commands dropped in flight, the server killed
 * under a pending subscription, a connect that fails. Every case runs on
 * both backends and both flavors; it ends with the adapter's leak check
 * (fut_redis_live) and the fixture's (fut_alloc_live). */
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fut/hiredis.h"
#include "harness.h"
#include "test.h"

#define MS (1000LL * 1000LL)

/* The servers of a case: redis-server, and fut-redis when it is built. */
static int nservers(void)
{
    return FUT_REDIS_BIN[0] ? 2 : 1;
}

static void server_start(struct srvproc *p, int which)
{
    if (which == 0)
        redis_server_start(p, "redis.sock");
    else
        fut_redis_start(p, "futredis.sock", NULL);
}

/* Runs fn(arg) on a fiber of a fresh runtime against each server; the
 * adapter's and fut's leak checks after each. */
struct run {
    struct srvproc p;
    int which;
    void *arg;
};

static void run_each(fut_fiber_fn fn, void *arg)
{
    for (int which = 0; which < nservers(); which++) {
        struct run a = {.which = which, .arg = arg};
        server_start(&a.p, which);
        struct fut_runtime *rt = fut_test_rt();
        intptr_t v = -1;
        ASSERT_EQ(fut_fiber_run(rt, fn, &a, NULL, &v), 0);
        ASSERT_EQ(v, 0);
        fut_runtime_free(rt);
        if (a.p.pid > 0)
            srv_stop(&a.p);
        ASSERT_EQ(fut_redis_live(), 0);
    }
    harness_cleanup();
}

static struct fut_redis *connect_to(const struct srvproc *p)
{
    struct fut_redis *r = NULL;
    ASSERT_EQ(fut_redis_connect_unix(p->sock, &r), 0);
    return r;
}

/* A command from the fiber, checked: its reply (yours). */
static redisReply *must(struct fut_redis *r, int type, const char *cmd,
                        const char *arg)
{
    redisReply *rep = NULL;
    int rc = arg ? fut_redis_call(r, &rep, cmd, arg)
                 : fut_redis_call(r, &rep, cmd);
    ck_assert_msg(rc == 0, "%s: %s", cmd, fut_strerror(rc));
    ck_assert_ptr_nonnull(rep);
    ck_assert_msg(rep->type == type, "%s: type %d, not %d (%s)", cmd,
                  rep->type, type, rep->str ? rep->str : "");
    return rep;
}

/* Polls 'inner' once, then again after each of 'yields' yields (the
 * driver task runs meanwhile: it writes the command), and is READY
 * whether 'inner' is or not; 'inner' is left as it stands. */
struct poll_some {
    struct fut_future base;
    struct fut_future *inner;
    int yields;
};

static int poll_some_poll(struct fut_future *f, struct fut_context *cx)
{
    struct poll_some *p = (struct poll_some *)f;
    if (fut_poll(p->inner, cx) == FUT_READY || p->yields-- == 0)
        return FUT_READY;
    fut_waker_wake_by_ref(&cx->waker);
    return FUT_PENDING;
}

static const struct fut_future_vtable poll_some_vt = {poll_some_poll, 0,
                                                      "poll_some", 0};

static void poll_some(struct fut_future *inner, int yields)
{
    struct poll_some p;
    fut_future_init(&p.base, &poll_some_vt);
    p.inner = inner;
    p.yields = yields;
    ASSERT_EQ(fut_await(&p), 0);
}

/* ------------------------------------------------------------ commands */

static intptr_t commands_fiber(void *p)
{
    struct fut_redis *r = connect_to(&((struct run *)p)->p);
    freeReplyObject(must(r, REDIS_REPLY_STATUS, "SET k %s", "v1"));
    redisReply *rep = must(r, REDIS_REPLY_STRING, "GET k", NULL);
    ck_assert_str_eq(rep->str, "v1");
    freeReplyObject(rep);
    freeReplyObject(must(r, REDIS_REPLY_NIL, "GET nokey", NULL));
    rep = must(r, REDIS_REPLY_INTEGER, "INCR n", NULL);
    ASSERT_EQ(rep->integer, 1);
    freeReplyObject(rep);
    rep = must(r, REDIS_REPLY_ERROR, "INCR k", NULL);
    freeReplyObject(rep);
    rep = must(r, REDIS_REPLY_ARRAY, "MGET k n %s", "nokey");
    ASSERT_EQ(rep->elements, 3);
    ck_assert_str_eq(rep->element[1]->str, "1");
    freeReplyObject(rep);
    /* The argv form, binary-safe, as a future awaited by the fiber. */
    const char *argv[] = {"SET", "bin", "a\0b"};
    size_t lens[] = {3, 3, 3};
    struct fut_redis_cmd c;
    fut_redis_cmd_argv_init(&c, r, 3, argv, lens);
    ASSERT_EQ(fut_await(&c), 0);
    ASSERT_EQ(c.result, 0);
    freeReplyObject(c.reply);
    rep = must(r, REDIS_REPLY_STRING, "GET bin", NULL);
    ASSERT_EQ(rep->len, 3);
    ASSERT_EQ(memcmp(rep->str, "a\0b", 3), 0);
    freeReplyObject(rep);
    /* No format: FUT_EINVAL at the first poll, nothing sent. */
    fut_redis_cmd_init(&c, r, NULL);
    ASSERT_EQ(fut_await(&c), 0);
    ASSERT_EQ(c.result, FUT_EINVAL);
    ASSERT_TRUE(c.reply == NULL);
    /* Pending when the context is closed: FUT_ECANCELED, the future still
     * valid after the close (it holds the context's memory). */
    fut_redis_cmd_init(&c, r, "PING");
    poll_some(&c.base, 0);
    ASSERT_TRUE(!fut_is_ready(&c.base));
    fut_redis_close(r);
    ASSERT_EQ(fut_await(&c), 0);
    ASSERT_EQ(c.result, FUT_ECANCELED);
    ASSERT_TRUE(c.reply == NULL);
    return 0;
}

START_TEST(commands)
{
    run_each(commands_fiber, NULL);
}
END_TEST

/* ----------------------------------------------------------- pipelined */

#define NPIPE 10000

/* Sends every command (one poll each), then takes the replies in order. */
struct pipe_fut {
    struct fut_future base;
    struct fut_redis_cmd *c;
    int n, sent, done;
};

static int pipe_poll(struct fut_future *f, struct fut_context *cx)
{
    struct pipe_fut *p = (struct pipe_fut *)f;
    /* 256 a poll (a poll must stay short: C6); no reply is awaited
     * before all are sent. */
    for (int k = 0; p->sent < p->n; p->sent++, k++) {
        if (k == 256) {
            fut_waker_wake_by_ref(&cx->waker);
            return FUT_PENDING;
        }
        fut_poll(&p->c[p->sent].base, cx);
    }
    for (; p->done < p->n; p->done++) {
        struct fut_redis_cmd *c = &p->c[p->done];
        if (fut_poll(&c->base, cx) == FUT_PENDING)
            return FUT_PENDING;
        ck_assert_msg(c->result == 0, "reply %d: %s", p->done,
                      fut_strerror(c->result));
        ck_assert_msg(c->reply->type == REDIS_REPLY_INTEGER &&
                          c->reply->integer == p->done + 1,
                      "reply %d: %lld", p->done, c->reply->integer);
        freeReplyObject(c->reply);
        fut_drop(&c->base);
    }
    return FUT_READY;
}

static const struct fut_future_vtable pipe_vt = {pipe_poll, 0, "pipe", 0};

static intptr_t pipelined_fiber(void *p)
{
    struct fut_redis *r = connect_to(&((struct run *)p)->p);
    struct pipe_fut pf;
    fut_future_init(&pf.base, &pipe_vt);
    pf.c = calloc(NPIPE, sizeof *pf.c);
    pf.n = NPIPE;
    pf.sent = pf.done = 0;
    for (int i = 0; i < NPIPE; i++) {
        fut_redis_cmd_init(&pf.c[i], r, "INCR pipe");
        if (i % 1000 == 999)
            fut_fiber_yield(); /* short polls (C6) */
    }
    ASSERT_EQ(fut_await(&pf), 0);
    ASSERT_EQ(pf.done, NPIPE);
    free(pf.c);
    fut_redis_close(r);
    return 0;
}

START_TEST(pipelined)
{
    run_each(pipelined_fiber, NULL);
}
END_TEST

/* ------------------------------------------------------------- pub/sub */

/* One poll_next of a stream, as a future (for a poll under a timeout
 * that leaves the stream as it is). */
struct poke {
    struct fut_future base;
    struct fut_redis_sub *s;
    struct fut_redis_msg m;
    int k;
};

static int poke_poll(struct fut_future *f, struct fut_context *cx)
{
    struct poke *p = (struct poke *)f;
    p->k = fut_stream_poll_next(&p->s->base, cx, &p->m);
    return p->k == FUT_PENDING ? FUT_PENDING : FUT_READY;
}

static const struct fut_future_vtable poke_vt = {poke_poll, 0, "poke", 0};

/* Polls 's' once (its SUBSCRIBE goes out), then publishes 'first' on
 * 'pub' until the server counts a subscriber; takes that message. */
static void subscribed(struct fut_redis_sub *s, struct fut_redis *pub,
                       const char *ch)
{
    struct poke k;
    fut_future_init(&k.base, &poke_vt);
    k.s = s;
    ASSERT_EQ(fut_timeout_await(&k, 1 * MS), FUT_ETIMEDOUT);
    for (int i = 0;; i++) {
        ck_assert_msg(i < 2000, "no subscriber on %s", ch);
        redisReply *rep = NULL;
        ASSERT_EQ(fut_redis_call(pub, &rep, "PUBLISH %s first", ch), 0);
        long long n = rep->integer;
        freeReplyObject(rep);
        if (n == 1)
            break;
        fut_sleep(2 * MS);
    }
    struct fut_redis_msg m;
    ASSERT_EQ(fut_redis_sub_next(s, &m), 0);
    /* Publishes before it counted nobody: this is the first delivered. */
    ck_assert_str_eq(m.reply->element[2]->str, "first");
    freeReplyObject(m.reply);
}

static void expect_msg(struct fut_redis_sub *s, const char *payload,
                       unsigned long lost)
{
    struct fut_redis_msg m;
    ASSERT_EQ(fut_redis_sub_next(s, &m), 0);
    ck_assert_str_eq(m.reply->element[0]->str, "message");
    ck_assert_str_eq(m.reply->element[2]->str, payload);
    ASSERT_EQ(m.lost, lost);
    freeReplyObject(m.reply);
}

static intptr_t pubsub_fiber(void *p)
{
    const struct srvproc *srv = &((struct run *)p)->p;
    struct fut_redis *sub = connect_to(srv), *pub = connect_to(srv);
    struct fut_redis_sub s, slow, dup;
    fut_redis_sub_init(&s, sub, "ch", 0);
    subscribed(&s, pub, "ch");
    char buf[32];
    for (int i = 0; i < 100; i++) {
        snprintf(buf, sizeof buf, "m%d", i);
        freeReplyObject(must(pub, REDIS_REPLY_INTEGER, "PUBLISH ch %s", buf));
    }
    for (int i = 0; i < 100; i++) {
        snprintf(buf, sizeof buf, "m%d", i);
        expect_msg(&s, buf, 0);
    }
    /* One stream per channel and context. */
    fut_redis_sub_init(&dup, sub, "ch", 0);
    struct fut_redis_msg m;
    ASSERT_EQ(fut_redis_sub_next(&dup, &m), 1);
    ASSERT_EQ(dup.result, -EEXIST);
    fut_stream_drop(&dup.base);
    /* A slow consumer: 4 queued, the rest counted as lost. */
    fut_redis_sub_init(&slow, sub, "slow", 4);
    subscribed(&slow, pub, "slow");
    for (int i = 0; i < 20; i++) {
        snprintf(buf, sizeof buf, "s%d", i);
        freeReplyObject(
            must(pub, REDIS_REPLY_INTEGER, "PUBLISH slow %s", buf));
    }
    fut_sleep(300 * MS); /* all 20 reach the adapter meanwhile */
    for (int i = 0; i < 4; i++) {
        snprintf(buf, sizeof buf, "s%d", i);
        expect_msg(&slow, buf, 0);
    }
    freeReplyObject(must(pub, REDIS_REPLY_INTEGER, "PUBLISH slow %s", "end"));
    expect_msg(&slow, "end", 16);
    ASSERT_EQ(slow.lost_total, 16);
    /* Dropped: UNSUBSCRIBE goes out, the server counts nobody. */
    fut_stream_drop(&s.base);
    for (int i = 0;; i++) {
        ck_assert_msg(i < 2000, "still subscribed");
        redisReply *rep =
            must(pub, REDIS_REPLY_INTEGER, "PUBLISH ch %s", "x");
        long long n = rep->integer;
        freeReplyObject(rep);
        if (n == 0)
            break;
        fut_sleep(2 * MS);
    }
    /* Closing ends the stream still open. */
    fut_redis_close(sub);
    ASSERT_EQ(fut_redis_sub_next(&slow, &m), 1);
    ASSERT_EQ(slow.result, FUT_ECANCELED);
    fut_stream_drop(&slow.base);
    fut_redis_close(pub);
    return 0;
}

START_TEST(pubsub)
{
    run_each(pubsub_fiber, NULL);
}
END_TEST

/* ------------------------------------------------------------- dropped */

/* Commands dropped while in flight: sent, polled again after the driver
 * ran, still pending, then dropped; their replies come later and go to
 * the adapter, and the next command gets its own reply. */
static intptr_t dropped_fiber(void *p)
{
    struct fut_redis *r = connect_to(&((struct run *)p)->p);
    int inflight = 0, written = 0;
    char a[32], b[32];
    for (int i = 0; i < 200; i++) {
        struct fut_redis_cmd c;
        snprintf(a, sizeof a, "a%d", i);
        fut_redis_cmd_init(&c, r, "ECHO %s", a);
        /* Sent only (still in hiredis's buffer), or written too. */
        poll_some(&c.base, i % 2);
        if (!fut_is_ready(&c.base)) {
            inflight++;
            written += i % 2;
        } else if (c.result == 0)
            freeReplyObject(c.reply);
        fut_drop(&c.base);
        snprintf(b, sizeof b, "b%d", i);
        redisReply *rep = must(r, REDIS_REPLY_STRING, "ECHO %s", b);
        ck_assert_str_eq(rep->str, b);
        freeReplyObject(rep);
    }
    /* Of the 100 written, all still wait for their reply when dropped on
     * the current-thread runtime (the driver writes, then the fiber runs
     * first); on the multi-thread one a reply may win the race (there the
     * point is a drop racing the reply on another worker). */
    ck_assert_msg(written >= (fut_test_rt_is_mt() ? 1 : 100),
                  "only %d of 100 dropped in flight", written);
    if (getenv("HIREDIS_TEST_VERBOSE"))
        printf("server %d: %d dropped pending, %d of them written\n",
               ((struct run *)p)->which, inflight, written);
    /* Many dropped at once, a pipeline's worth, then closed before
     * their replies: nothing lands anywhere, nothing leaks. */
    struct fut_redis_cmd *cs = calloc(1000, sizeof *cs);
    struct pipe_fut pf;
    fut_future_init(&pf.base, &pipe_vt);
    pf.c = cs;
    pf.n = 1000;
    pf.sent = pf.done = 0;
    for (int i = 0; i < 1000; i++)
        fut_redis_cmd_init(&cs[i], r, "INCR dropped");
    poll_some(&pf.base, 1);
    ASSERT_TRUE(!fut_is_ready(&pf.base));
    for (int i = 0; i < 1000; i++)
        fut_drop(&cs[i].base);
    free(cs);
    freeReplyObject(must(r, REDIS_REPLY_STATUS, "PING", NULL));
    fut_redis_close(r);
    return 0;
}

START_TEST(dropped)
{
    run_each(dropped_fiber, NULL);
}
END_TEST

/* -------------------------------------------------------------- killed */

struct killer {
    pthread_t t;
    pid_t pid;
};

static void *kill_later(void *p)
{
    struct killer *k = p;
    struct timespec ts = {0, 100 * 1000 * 1000};
    nanosleep(&ts, NULL);
    kill(k->pid, SIGKILL);
    return NULL;
}

/* The server killed while a subscription waits and a command is due:
 * the stream ends with -ECONNRESET, commands fail with it, no hang. */
static intptr_t killed_fiber(void *p)
{
    struct run *a = p;
    struct fut_redis *sub = connect_to(&a->p), *r = connect_to(&a->p);
    struct fut_redis_sub s;
    fut_redis_sub_init(&s, sub, "ch", 0);
    subscribed(&s, r, "ch");
    struct killer k = {.pid = a->p.pid};
    ASSERT_EQ(pthread_create(&k.t, NULL, kill_later, &k), 0);
    struct fut_redis_msg m;
    ASSERT_EQ(fut_redis_sub_next(&s, &m), 1);
    ASSERT_EQ(s.result, -ECONNRESET);
    pthread_join(k.t, NULL);
    ASSERT_EQ(fut_redis_status(sub), -ECONNRESET);
    /* The other context learns it at its next command. */
    redisReply *rep = NULL;
    int rc = fut_redis_call(r, &rep, "PING");
    ASSERT_EQ(rc, -ECONNRESET);
    ASSERT_TRUE(rep == NULL);
    ASSERT_EQ(fut_redis_call(r, &rep, "PING"), -ECONNRESET);
    ASSERT_EQ(fut_redis_status(r), -ECONNRESET);
    fut_stream_drop(&s.base);
    fut_redis_close(sub);
    fut_redis_close(r);
    return 0;
}

START_TEST(killed)
{
    run_each(killed_fiber, NULL);
}
END_TEST

/* ------------------------------------------------------ connect fails */

static intptr_t refused_fiber(void *p)
{
    struct fut_redis *r = NULL;
    char path[300];
    snprintf(path, sizeof path, "%s/none.sock", harness_dir());
    ck_assert_int_lt(fut_redis_connect_unix(path, &r), 0);
    ASSERT_TRUE(r == NULL);
    /* Refused later (TCP, in the background): the command says so. */
    ASSERT_EQ(fut_redis_connect("127.0.0.1", 1, &r), 0);
    redisReply *rep = NULL;
    ASSERT_EQ(fut_redis_call(r, &rep, "PING"), -ECONNRESET);
    fut_redis_close(r);
    return 0;
}

START_TEST(refused)
{
    struct fut_runtime *rt = fut_test_rt();
    intptr_t v = -1;
    ASSERT_EQ(fut_fiber_run(rt, refused_fiber, NULL, NULL, &v), 0);
    ASSERT_EQ(v, 0);
    fut_runtime_free(rt);
    ASSERT_EQ(fut_redis_live(), 0);
    harness_cleanup();
}
END_TEST

int main(void)
{
    static const char *const progs[] = {"redis-server", NULL};
    harness_require(progs);
    /* hiredis writes with write(2): a write to a killed server must be
     * EPIPE, not the end of the test. */
    signal(SIGPIPE, SIG_IGN);
    Suite *s = suite_create("hiredis");
    tcase_add_test(fut_test_tcase(s, "commands"), commands);
    tcase_add_test(fut_test_tcase(s, "pipelined"), pipelined);
    tcase_add_test(fut_test_tcase(s, "pubsub"), pubsub);
    tcase_add_test(fut_test_tcase(s, "dropped"), dropped);
    tcase_add_test(fut_test_tcase(s, "killed"), killed);
    tcase_add_test(fut_test_tcase(s, "refused"), refused);
    return fut_test_run(s);
}
