/* SPDX-License-Identifier: MIT */
/* The blocking pool (C6, C11): values come back, threads are bounded,
 * a full queue makes submitters wait (backpressure), a job not started is
 * cancelled when its future is dropped, a running one finishes and its
 * value goes to 'discard', idle threads exit after the keep-alive, and the
 * paused clock does not jump while a job runs. Plus the fs operations and
 * getaddrinfo built on it. */
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>

#include "io/io_internal.h"
#include "io_helpers.h"

static struct fut_runtime *pool_rt(int threads, int queue, int64_t keepalive,
                                   int paused)
{
    struct fut_rt_config cfg;
    fut_rt_config_init(&cfg);
    cfg.blocking_threads = threads;
    cfg.blocking_queue = queue;
    cfg.blocking_keepalive_ns = keepalive;
    cfg.start_paused = paused;
    struct fut_runtime *rt;
    ASSERT_EQ(fut_runtime_new(&cfg, &rt), 0);
    return rt;
}

/* ------------------------------------------------------------- jobs */

struct counters {
    atomic_int running, max_running, ran, discarded;
    atomic_int gate; /* jobs spin until it is set */
};

static intptr_t job_fn(void *arg)
{
    struct counters *c = arg;
    int now = atomic_fetch_add(&c->running, 1) + 1;
    int m = atomic_load(&c->max_running);
    while (now > m && !atomic_compare_exchange_weak(&c->max_running, &m, now))
        ;
    int64_t t0 = fut_now_ns();
    while (!atomic_load(&c->gate) && fut_now_ns() - t0 < 5000 * MS)
        usleep(200);
    atomic_fetch_add(&c->ran, 1);
    atomic_fetch_sub(&c->running, 1);
    return 42;
}

static void discard_fn(void *arg, intptr_t v)
{
    struct counters *c = arg;
    if (v == 42)
        atomic_fetch_add(&c->discarded, 1);
}

struct job_task {
    struct fut_future base;
    struct fut_blocking b;
    struct counters *c;
    intptr_t value;
    int result;
};

static int job_task_poll(struct fut_future *f, struct fut_context *cx)
{
    struct job_task *t = (struct job_task *)f;
    FUT_BEGIN(f);
    fut_spawn_blocking_init(&t->b, job_fn, t->c);
    fut_blocking_set_discard(&t->b, discard_fn);
    FUT_AWAIT(f, &t->b);
    t->result = t->b.result;
    t->value = t->b.value;
    FUT_END(f);
}
FUT_ASYNC_VTABLE(job_task_vt, "job_task", job_task_poll, NULL);

static void spawn_job(struct fut_runtime *rt, struct counters *c,
                      struct fut_join *j)
{
    struct job_task t;
    memset(&t, 0, sizeof t);
    fut_future_init(&t.base, &job_task_vt);
    t.c = c;
    ASSERT_EQ(fut_spawn(rt, &t, sizeof t, j), 0);
}

START_TEST(pool_values_and_bounded_threads)
{
    struct fut_runtime *rt = pool_rt(3, 0, 0, 0);
    struct counters c;
    memset(&c, 0, sizeof c);
    enum { N = 20 };
    struct fut_join j[N];
    for (int i = 0; i < N; i++)
        spawn_job(rt, &c, &j[i]);
    fut_test_run_pending(rt);
    /* Open the gate once the pool runs its 3 threads (bounded: 5 s); a
     * fixed sleep was too short on a loaded machine. */
    for (int w = 0; atomic_load(&c.max_running) < 3 && w < 5000; w++)
        usleep(1000);
    atomic_store(&c.gate, 1);
    for (int i = 0; i < N; i++) {
        ASSERT_EQ(fut_block_on(rt, &j[i].base), 0);
        struct job_task *o = fut_join_output(&j[i]);
        ASSERT_EQ(o->result, 0);
        ASSERT_EQ(o->value, 42);
        fut_drop(&j[i].base);
    }
    ASSERT_EQ(atomic_load(&c.ran), N);
    ck_assert_msg(atomic_load(&c.max_running) <= 3, "%d threads at once",
                  atomic_load(&c.max_running));
    ASSERT_EQ(atomic_load(&c.max_running), 3);
    fut_runtime_free(rt);
}
END_TEST

/* Queue of 2 with 1 thread: the 4th and later submitters wait (their
 * futures stay PENDING without spinning) and all run in order. */
START_TEST(pool_backpressure)
{
    struct fut_runtime *rt = pool_rt(1, 2, 0, 0);
    struct counters c;
    memset(&c, 0, sizeof c);
    enum { N = 8 };
    struct fut_join j[N];
    for (int i = 0; i < N; i++)
        spawn_job(rt, &c, &j[i]);
    fut_test_run_pending(rt);
    usleep(20000);
    struct fut_rt_stats st0, st1;
    fut_runtime_stats(rt, &st0);
    fut_test_run_pending(rt);
    usleep(20000);
    fut_runtime_stats(rt, &st1);
    /* Waiting submitters are not polled in a loop. */
    ck_assert_msg(st1.polls - st0.polls < 20, "%llu polls while waiting",
                  (unsigned long long)(st1.polls - st0.polls));
    ASSERT_EQ(atomic_load(&c.ran), 0);
    atomic_store(&c.gate, 1);
    for (int i = 0; i < N; i++) {
        ASSERT_EQ(fut_block_on(rt, &j[i].base), 0);
        ASSERT_EQ(((struct job_task *)fut_join_output(&j[i]))->value, 42);
        fut_drop(&j[i].base);
    }
    ASSERT_EQ(atomic_load(&c.ran), N);
    ASSERT_EQ(atomic_load(&c.max_running), 1);
    fut_runtime_free(rt);
}
END_TEST

/* Dropped before it started: the job never runs. Dropped while running:
 * it finishes and its value goes to discard. */
START_TEST(pool_cancel_not_started)
{
    struct fut_runtime *rt = pool_rt(1, 0, 0, 0);
    struct counters c;
    memset(&c, 0, sizeof c);
    struct fut_join j[4];
    for (int i = 0; i < 4; i++)
        spawn_job(rt, &c, &j[i]);
    fut_test_run_pending(rt);
    int64_t t0 = fut_now_ns();
    while (atomic_load(&c.running) == 0 && fut_now_ns() - t0 < 2000 * MS)
        usleep(500);
    ASSERT_EQ(atomic_load(&c.running), 1);
    for (int i = 0; i < 4; i++)
        fut_drop(&j[i].base); /* one running, three queued */
    fut_test_run_pending(rt);
    atomic_store(&c.gate, 1);
    fut_runtime_free(rt); /* waits for the running one */
    ASSERT_EQ(atomic_load(&c.ran), 1);
    ASSERT_EQ(atomic_load(&c.discarded), 1);
}
END_TEST

static int thread_count(void)
{
    DIR *d = opendir("/proc/self/task");
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n;
}

static void pool_threads(void *ud)
{
    *(int *)ud = fut__pool_threads(fut__iodrv_current()->pool);
}

START_TEST(pool_keepalive_exit)
{
    struct fut_runtime *rt = pool_rt(4, 0, 30 * MS, 0);
    /* The base after a first block_on: the runtime's own threads (the
     * long-poll watchdog of debug builds starts there) are not the
     * pool's. */
    int n = 0;
    run_on(rt, pool_threads, &n);
    ASSERT_EQ(n, 0);
    int base = thread_count();
    struct counters c;
    memset(&c, 0, sizeof c);
    atomic_store(&c.gate, 1);
    struct fut_join j[4];
    for (int i = 0; i < 4; i++)
        spawn_job(rt, &c, &j[i]);
    for (int i = 0; i < 4; i++) {
        ASSERT_EQ(fut_block_on(rt, &j[i].base), 0);
        fut_drop(&j[i].base);
    }
    run_on(rt, pool_threads, &n);
    ck_assert(n >= 1 && n <= 4);
    int64_t t0 = fut_now_ns();
    while (n > 0 && fut_now_ns() - t0 < 3000 * MS) {
        usleep(5000);
        run_on(rt, pool_threads, &n);
    }
    ASSERT_EQ(n, 0); /* every thread exited after 30 ms idle */
    /* A pool thread leaves the count before its OS thread is gone (it is
     * detached, and under TSan its exit takes a while): wait, bounded. */
    t0 = fut_now_ns();
    while (thread_count() > base + 1 && fut_now_ns() - t0 < 3000 * MS)
        usleep(5000);
    ck_assert(thread_count() <= base + 1); /* (+1: a sanitizer's own) */
    fut_runtime_free(rt);
}
END_TEST

/* Without a runtime: FUT_EINVAL. */
START_TEST(pool_no_runtime)
{
    struct counters c;
    memset(&c, 0, sizeof c);
    struct fut_blocking b;
    fut_spawn_blocking_init(&b, job_fn, &c);
    ASSERT_EQ(fut_block_on(NULL, &b.base), 0);
    ASSERT_EQ(b.result, FUT_EINVAL);
    fut_drop(&b.base);
    ASSERT_EQ(atomic_load(&c.ran), 0);
}
END_TEST

/* A paused clock does not jump while a job runs: a 1 h timeout around a
 * 50 ms job does not fire. */
struct paused_main {
    struct fut_future base;
    struct fut_blocking b;
    struct fut_timeout to;
    struct counters *c;
    int result;
};

static int paused_main_poll(struct fut_future *f, struct fut_context *cx)
{
    struct paused_main *m = (struct paused_main *)f;
    FUT_BEGIN(f);
    fut_spawn_blocking_init(&m->b, job_fn, m->c);
    fut_timeout_init(&m->to, &m->b.base, fut_time_now() + 3600000 * MS);
    FUT_AWAIT(f, &m->to);
    m->result = m->to.result;
    FUT_END(f);
}
FUT_ASYNC_VTABLE(paused_main_vt, "paused_main", paused_main_poll, NULL);

static void *open_gate(void *arg)
{
    usleep(50000);
    atomic_store(&((struct counters *)arg)->gate, 1);
    return NULL;
}

START_TEST(pool_inhibits_paused_clock)
{
    struct fut_runtime *rt = pool_rt(0, 0, 0, 1);
    struct counters c;
    memset(&c, 0, sizeof c);
    struct paused_main m;
    memset(&m, 0, sizeof m);
    fut_future_init(&m.base, &paused_main_vt);
    m.c = &c;
    pthread_t th;
    pthread_create(&th, NULL, open_gate, &c);
    ASSERT_EQ(fut_block_on(rt, &m.base), 0);
    pthread_join(th, NULL);
    ASSERT_EQ(m.result, 0);
    ASSERT_EQ(m.b.value, 42);
    fut_drop(&m.base);
    fut_runtime_free(rt);
}
END_TEST

/* --------------------------------------------------------------- fs */

START_TEST(fs_ops)
{
    struct fut_runtime *rt = rt_make(0);
    char path[] = "/tmp/fut-fs-XXXXXX";
    int tmp = mkstemp(path);
    ck_assert(tmp >= 0);
    close(tmp);
    struct fut_fs f;
    fut_fs_open_init(&f, path, O_RDWR | O_TRUNC, 0600);
    ASSERT_EQ(fut_block_on(rt, &f.base), 0);
    ck_assert(f.result >= 0);
    int fd = (int)f.result;
    fut_drop(&f.base);
    fut_fs_write_init(&f, fd, "hello world", 11, 0);
    ASSERT_EQ(fut_block_on(rt, &f.base), 0);
    ASSERT_EQ(f.result, 11);
    fut_drop(&f.base);
    fut_fs_fsync_init(&f, fd);
    ASSERT_EQ(fut_block_on(rt, &f.base), 0);
    ASSERT_EQ(f.result, 0);
    fut_drop(&f.base);
    char buf[32] = {0};
    fut_fs_read_init(&f, fd, buf, 5, 6);
    ASSERT_EQ(fut_block_on(rt, &f.base), 0);
    ASSERT_EQ(f.result, 5);
    ASSERT_EQ(memcmp(buf, "world", 5), 0);
    fut_drop(&f.base);
    struct stat st;
    fut_fs_fstat_init(&f, fd, &st);
    ASSERT_EQ(fut_block_on(rt, &f.base), 0);
    ASSERT_EQ(f.result, 0);
    ASSERT_EQ(st.st_size, 11);
    fut_drop(&f.base);
    memset(&st, 0, sizeof st);
    fut_fs_stat_init(&f, path, &st);
    ASSERT_EQ(fut_block_on(rt, &f.base), 0);
    ASSERT_EQ(f.result, 0);
    ASSERT_EQ(st.st_size, 11);
    fut_drop(&f.base);
    fut_fs_open_init(&f, "/nonexistent/x", O_RDONLY, 0);
    ASSERT_EQ(fut_block_on(rt, &f.base), 0);
    ASSERT_EQ(f.result, -ENOENT);
    fut_drop(&f.base);
    /* Dropped after the open ran but before READY was seen: the fd is
     * closed for us (no fd leak). */
    int fds0 = count_fds();
    fut_fs_open_init(&f, path, O_RDONLY, 0);
    struct count_waker cw;
    atomic_init(&cw.wakes, 0);
    (void)cw;
    fut_drop(&f.base); /* never polled: nothing happened */
    ASSERT_EQ(count_fds(), fds0);
    close(fd);
    unlink(path);
    fut_runtime_free(rt);
}
END_TEST

START_TEST(dns_resolve)
{
    struct fut_runtime *rt = rt_make(0);
    struct addrinfo hints;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICHOST;
    struct fut_getaddrinfo g;
    fut_getaddrinfo_init(&g, "127.0.0.1", "8080", &hints);
    ASSERT_EQ(fut_block_on(rt, &g.base), 0);
    ASSERT_EQ(g.result, 0);
    ck_assert(g.res != NULL);
    ASSERT_EQ(ntohs(((struct sockaddr_in *)g.res->ai_addr)->sin_port), 8080);
    freeaddrinfo(g.res);
    fut_drop(&g.base);
    fut_getaddrinfo_init(&g, "not a host", NULL, &hints);
    ASSERT_EQ(fut_block_on(rt, &g.base), 0);
    ASSERT_EQ(g.result, -ENOENT);
    fut_drop(&g.base);
    fut_getaddrinfo_init(&g, NULL, NULL, NULL);
    ASSERT_EQ(fut_block_on(rt, &g.base), 0);
    ASSERT_EQ(g.result, FUT_EINVAL);
    fut_drop(&g.base);
    /* localhost comes from /etc/hosts: no network. */
    fut_getaddrinfo_init(&g, "localhost", NULL, NULL);
    ASSERT_EQ(fut_block_on(rt, &g.base), 0);
    if (g.result == 0)
        freeaddrinfo(g.res);
    fut_drop(&g.base);
    fut_runtime_free(rt);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("io_blocking");
    TCase *tc = fut_test_tcase(s, "pool");
    tcase_add_test(tc, pool_values_and_bounded_threads);
    tcase_add_test(tc, pool_backpressure);
    tcase_add_test(tc, pool_cancel_not_started);
    tcase_add_test(tc, pool_no_runtime);
    tcase_add_test(tc, pool_inhibits_paused_clock);
    tc = fut_test_tcase(s, "keepalive");
    tcase_add_test(tc, pool_keepalive_exit);
    tc = fut_test_tcase(s, "fs");
    tcase_add_test(tc, fs_ops);
    tcase_add_test(tc, dns_resolve);
    return fut_test_run(s);
}
