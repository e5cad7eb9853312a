/* SPDX-License-Identifier: MIT */
/* A busy task stalls nobody else (src/rt/multi/monitor.c): on the
 * multi-thread runtime with 2 workers, one task woken by the driver spins
 * 500 ms inside one poll while
 *   timers:   a fiber elsewhere sleeps 5 ms at a time and measures how
 *             late each sleep ends: at most 10 ms plus the wheel's 1 ms
 *             tick;
 *   together: tasks woken by the same timer tick as the spinner, some
 *             queued behind it on its worker, run within the same bound
 *             (the other worker takes them: on io_uring's per-worker
 *             rings only the stuck detection offers them, docs/
 *             scheduler.md "Locality");
 *   echo:     a client connected before the spin gets its echo, and a new
 *             client connects and gets its echo, within 10 ms each.
 * All three run on both backends (on io_uring the fds of the busy
 * worker's ring are served by its peer's rescue: src/io/uring/rescue.c).
 *
 * Without the monitor the worker that left the driver to run the spinner
 * is the only one awake, and every timer and connection waits for its
 * poll to return (~500 ms). Sanitizer builds get a wider bound (TSan
 * slows every wake; the bound is still 20x below the stall).
 *
 * The machine's share. These bounds measure the runtime, but a thread of
 * it that is runnable and waits for a CPU (other processes on a shared
 * machine; the spinner holds one of two cores) is late by that wait
 * whatever the runtime does. Each measured interval adds to its bound the
 * run-queue wait the process's threads other than the spinner's
 * accumulated during it (/proc/self/task/N/schedstat, second field; none
 * where the kernel has no schedstat). A stall is not such a wait: the
 * threads that should serve sleep instead (not runnable), so it still
 * fails the test. The allowance is at most 100 ms (SHARE_MAX), so a
 * stall for the spin's length fails however loaded the machine is; on a
 * quiet machine it is about 0 and the bounds are the plain ones. It is
 * printed with a failure.
 *
 * Twice at most. A shared machine also delays a thread in ways the
 * run-queue wait does not count (a vCPU the host preempts, page reclaim):
 * CI once saw one timer 48 ms late in a sanitized build, 4 ms of it
 * counted, where hundreds of local runs under load stay under 12 ms. So a
 * measurement over its bound is taken once more, and the test fails when
 * the second one is over too (both are printed). A stall of the runtime
 * (the spin's 500 ms, what these tests look for) repeats, so it still
 * fails; a lateness that comes one run in a hundred passes more often.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "test.h"

#define SPIN_NS (500LL * 1000 * 1000)
#define MS (1000LL * 1000)
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define STALL_SANITIZED 1
#endif
#endif
#if defined(FUT_TEST_TSAN) || defined(__SANITIZE_ADDRESS__) ||               \
    defined(STALL_SANITIZED)
#define LATE_MAX (40 * MS)
#else
#define LATE_MAX (11 * MS) /* 10 ms + the wheel's tick */
#endif

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void spin(int64_t ns)
{
    int64_t end = now_ns() + ns;
    while (now_ns() < end)
        ;
}

static struct fut_runtime *mt2(void)
{
    struct fut_rt_config cfg;
    fut_rt_config_init(&cfg);
    cfg.flavor = FUT_RT_MULTI_THREAD;
    cfg.workers = 2;
    cfg.slow_poll_ns = -1; /* the spin is on purpose */
    struct fut_runtime *rt = NULL;
    int r = fut_runtime_new(&cfg, &rt);
    ck_assert_msg(r == 0, "fut_runtime_new: %s", fut_strerror(r));
    return rt;
}

/* ------------------------------------------------ the machine's share */

#define MAX_THREADS 32

/* Each thread's run-queue wait and time on a CPU so far (ns), by thread
 * id (/proc/.../schedstat's second and first fields). */
struct waits {
    int n;
    long tid[MAX_THREADS];
    int64_t ns[MAX_THREADS];
    int64_t run[MAX_THREADS];
};

static void waits_read(struct waits *w)
{
    w->n = 0;
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && w->n < MAX_THREADS) {
        if (e->d_name[0] == '.')
            continue;
        char path[300];
        snprintf(path, sizeof path, "/proc/self/task/%s/schedstat",
                 e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        long long run, wait;
        if (fscanf(f, "%lld %lld", &run, &wait) == 2) {
            w->tid[w->n] = atol(e->d_name);
            w->run[w->n] = run;
            w->ns[w->n++] = wait;
        }
        fclose(f);
    }
    closedir(d);
}

static atomic_long spin_tid; /* the spinner's thread, once it spins */

/* The run-queue wait between 'a' and 'b' of the threads in both, but the
 * spinner's. */
static int64_t waited(const struct waits *a, const struct waits *b)
{
    long skip = atomic_load(&spin_tid);
    int64_t sum = 0;
    for (int i = 0; i < b->n; i++)
        for (int j = 0; j < a->n; j++)
            if (a->tid[j] == b->tid[i] && b->tid[i] != skip)
                sum += b->ns[i] - a->ns[j];
    return sum;
}

/* The allowance for a measured share: at most SHARE_MAX, so that a stall
 * for the length of the spin fails however starved the machine is (the
 * share can be large without being on the late task's path: every wake
 * of a ticking thread under load adds its wait). */
#define SHARE_MAX (SPIN_NS / 5)

static int64_t allowance(int64_t share)
{
    return share < 0 ? 0 : share > SHARE_MAX ? SHARE_MAX : share;
}

/* One measured lateness: what, how long it took, the machine's share
 * of that, and its bound. */
struct late {
    const char *what;
    int64_t took, share, bound;
};

#define MAX_LATE 2 /* measured per run */

static int over(const struct late *l)
{
    return l->took - allowance(l->share) > l->bound;
}

/* A run of a test: fills 'out' and returns how many it measured. */
typedef int (*measure_fn)(struct late out[MAX_LATE]);

/* Runs 'run' and, when a figure is over its bound, once more (the file's
 * rules, "Twice at most"); fails when the second run is over too. */
static void within_twice(measure_fn run)
{
    struct late a[MAX_LATE], b[MAX_LATE];
    int na = run(a), again = 0;
    for (int i = 0; i < na; i++)
        if (over(&a[i])) {
            again = 1;
            fprintf(stderr,
                    "%s: %lld us, %lld us of it the machine's share (bound "
                    "%lld us + that share): measured once more\n",
                    a[i].what, (long long)a[i].took / 1000,
                    (long long)a[i].share / 1000,
                    (long long)a[i].bound / 1000);
        }
    if (!again)
        return;
    int nb = run(b);
    for (int i = 0; i < nb; i++)
        ck_assert_msg(!over(&b[i]),
                      "%s, twice: %lld us, %lld us of it the machine's "
                      "share (bound %lld us + that share, at most %lld); "
                      "the first run's: %lld us, share %lld us",
                      b[i].what, (long long)b[i].took / 1000,
                      (long long)b[i].share / 1000,
                      (long long)b[i].bound / 1000,
                      (long long)SHARE_MAX / 1000,
                      (long long)(i < na ? a[i].took : 0) / 1000,
                      (long long)(i < na ? a[i].share : 0) / 1000);
}

static void spin_begin(void)
{
    atomic_store(&spin_tid, (long)syscall(SYS_gettid));
}

/* ---------------------------------------------------------------- timers */

static atomic_llong spin_from, spin_to; /* the spin's window */

static intptr_t spinner(void *arg)
{
    fut_sleep(100 * MS); /* woken by the driver, as a handler would be */
    spin_begin();
    atomic_store(&spin_from, now_ns());
    spin(SPIN_NS);
    atomic_store(&spin_to, now_ns());
    return 0;
}

#define MAX_TICKS 1024

struct ticks {
    int n;
    int64_t due[MAX_TICKS], end[MAX_TICKS]; /* each sleep's */
    int64_t waited[MAX_TICKS];              /* the machine's share */
};

static intptr_t ticker(void *arg)
{
    struct ticks *t = arg;
    int64_t stop = now_ns() + 800 * MS; /* past the spin's end */
    struct waits w0, w1;
    while (now_ns() < stop && t->n < MAX_TICKS) {
        waits_read(&w0);
        t->due[t->n] = now_ns() + 5 * MS;
        fut_sleep(5 * MS);
        t->end[t->n] = now_ns();
        waits_read(&w1);
        t->waited[t->n++] = waited(&w0, &w1);
    }
    return 0;
}

static int timers_once(struct late out[MAX_LATE])
{
    struct fut_runtime *rt = mt2();
    atomic_store(&spin_from, 0);
    atomic_store(&spin_to, 0);
    atomic_store(&spin_tid, 0);
    static struct ticks t;
    t.n = 0;
    struct fut_join js, jt;
    ASSERT_EQ(fut_fiber_spawn(rt, ticker, &t, NULL, &jt), 0);
    ASSERT_EQ(fut_fiber_spawn(rt, spinner, NULL, NULL, &js), 0);
    ASSERT_EQ(fut_block_on(rt, &js.base), 0);
    ASSERT_EQ(fut_block_on(rt, &jt.base), 0);
    fut_drop(&js.base);
    fut_drop(&jt.base);
    fut_runtime_free(rt);
    /* The sleeps due while the spin ran (about 80 of 5 ms in 500 ms):
     * how late each ended. */
    int64_t from = atomic_load(&spin_from), to = atomic_load(&spin_to);
    int64_t worst = 0, worst_late = 0, worst_waited = 0;
    int inside = 0;
    for (int i = 0; i < t.n; i++)
        if (t.due[i] >= from && t.due[i] <= to - 20 * MS) {
            inside++;
            int64_t late = t.end[i] - t.due[i];
            if (late - allowance(t.waited[i]) > worst) {
                worst = late - allowance(t.waited[i]);
                worst_late = late;
                worst_waited = t.waited[i];
            }
        }
    ck_assert_msg(inside >= 1, "no sleep was due during the spin");
    out[0] = (struct late){"the latest of the timers due during the spin",
                           worst_late, worst_waited, LATE_MAX};
    return 1;
}

START_TEST(timers)
{
    within_twice(timers_once);
}
END_TEST

/* ------------------------------------------------------------------ echo */

/* One connection: echoes what it reads; a read that starts with 'S'
 * spins SPIN_NS inside the poll first. */
static intptr_t conn(void *io)
{
    char buf[256];
    ssize_t n;
    while ((n = fut_read(io, buf, sizeof buf)) > 0) {
        if (buf[0] == 'S') {
            spin_begin();
            spin(SPIN_NS);
        }
        if (fut_write_all(io, buf, (size_t)n) < 0)
            break;
    }
    fut_io_close(io);
    return 0;
}

#define NCONN 3

static int dial(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct timeval tv = {5, 0}; /* a lost echo fails, not hangs */
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    return fd;
}

/* read(2) of one byte, again after EINTR: on io_uring a ring's exit
 * (a ring this thread submitted to, e.g. a current-thread runtime's it
 * freed) sends task work (TWA_SIGNAL) to every thread that submitted to
 * it, which interrupts a socket read with a timeout (SO_RCVTIMEO) with
 * EINTR - no signal (docs/io.md). The backend's probe ring no longer
 * does: it runs on a thread of its own. */
static ssize_t read_eintr(int fd, char *got)
{
    ssize_t n;
    do
        n = read(fd, got, 1);
    while (n < 0 && errno == EINTR);
    return n;
}

/* Sends one byte and waits for its echo; returns the round trip. */
static int64_t echo(int fd, char c)
{
    int64_t t0 = now_ns();
    ck_assert_int_eq(write(fd, &c, 1), 1);
    char got = 0;
    ck_assert_int_eq(read_eintr(fd, &got), 1);
    ck_assert_int_eq(got, c);
    return now_ns() - t0;
}

static int echo_once(struct late out[MAX_LATE])
{
    atomic_store(&spin_tid, 0);
    struct fut_runtime *rt = mt2();
    struct fut_join conns[NCONN];
    struct fut_test_acceptor s = {NULL, NCONN, conn, conns};
    struct sockaddr_storage ss;
    socklen_t len;
    ASSERT_EQ(fut_addr_parse("127.0.0.1", 0, &ss, &len), 0);
    ASSERT_EQ(fut_tcp_listen((struct sockaddr *)&ss, len, 0, &s.ln), 0);
    ASSERT_EQ(fut_io_local_addr(s.ln, &ss, &len), 0);
    int port = fut_addr_port(&ss);
    struct fut_join ja;
    ASSERT_EQ(fut_fiber_spawn(rt, fut_test_acceptor_main, &s, NULL, &ja), 0);

    int a = dial(port), b = dial(port);
    echo(a, 'a'); /* both served before the spin */
    echo(b, 'b');
    char S = 'S';
    ASSERT_EQ(write(a, &S, 1), 1);
    struct timespec pause = {0, 50 * MS}; /* the spin has begun */
    nanosleep(&pause, NULL);
    struct waits w0, w1, w2;
    waits_read(&w0);
    int64_t t_spin = now_ns();
    int64_t lat_b = echo(b, 'B');
    waits_read(&w1);
    int64_t t0 = now_ns();
    int c = dial(port);
    echo(c, 'C');
    int64_t lat_c = now_ns() - t0; /* the connect and the echo */
    waits_read(&w2);
    int64_t during = now_ns() - t_spin;
    int64_t share_b = waited(&w0, &w1), share_c = waited(&w1, &w2);
    char got = 0;
    ASSERT_EQ(read_eintr(a, &got), 1); /* the spinner's echo, after it */
    ASSERT_EQ(got, 'S');
    close(a);
    close(b);
    close(c);
    ASSERT_EQ(fut_block_on(rt, &ja.base), 0);
    for (int i = 0; i < NCONN; i++) {
        ASSERT_EQ(fut_block_on(rt, &conns[i].base), 0);
        fut_drop(&conns[i].base);
    }
    fut_drop(&ja.base);
    fut_io_close(s.ln);
    fut_runtime_free(rt);
    /* Measured inside the spin (it lasts 500 ms; these took far less). */
    ck_assert_msg(during < SPIN_NS - 100 * MS,
                  "not measured during the spin");
    out[0] = (struct late){"echo behind the spin", lat_b, share_b,
                           LATE_MAX / 11 * 10};
    out[1] = (struct late){"connect + echo behind the spin", lat_c, share_c,
                           LATE_MAX / 11 * 10};
    return 2;
}

START_TEST(echo_behind_spin)
{
    within_twice(echo_once);
}
END_TEST

/* -------------------------------------------------------------- together */

#define NVICTIM 4
/* How far ahead the wake is set: every task must be sleeping by then
 * (TSan under load has taken more than 100 ms to start them). */
#if defined(FUT_TEST_TSAN) || defined(__SANITIZE_ADDRESS__) ||               \
    defined(STALL_SANITIZED)
#define TOGETHER_LEAD (400 * MS)
#else
#define TOGETHER_LEAD (100 * MS)
#endif

static int64_t together_at;      /* when the spinner and the victims wake */
static atomic_int together_void; /* a task began after together_at */
static atomic_llong victim_late[NVICTIM], victim_waited[NVICTIM];
static struct waits together_w0; /* read at the wake (main thread) */
static atomic_int together_w0_set;

/* Sleeps until together_at; 0 when that had passed already (fut_sleep of
 * a negative time would sleep until cancelled). */
static int sleep_until_together(void)
{
    int64_t ns = together_at - now_ns();
    if (ns <= 0) {
        atomic_store(&together_void, 1);
        return 0;
    }
    fut_sleep(ns);
    return 1;
}

static intptr_t together_spinner(void *arg)
{
    (void)arg;
    if (!sleep_until_together())
        return 0;
    spin_begin();
    spin(SPIN_NS);
    return 0;
}

static intptr_t victim(void *arg)
{
    intptr_t i = (intptr_t)arg;
    if (!sleep_until_together())
        return 0;
    int64_t late = now_ns() - together_at;
    struct waits w1;
    waits_read(&w1);
    atomic_store(&victim_late[i], late);
    /* None counted when it ran before the main thread's read. */
    if (atomic_load(&together_w0_set)) {
        int64_t share = waited(&together_w0, &w1);
        atomic_store(&victim_waited[i], share > 0 ? share : 0);
    }
    return 0;
}

static int together_once(struct late out[MAX_LATE])
{
    atomic_store(&spin_tid, 0);
    struct fut_runtime *rt = mt2();
    together_at = now_ns() + TOGETHER_LEAD;
    atomic_store(&together_w0_set, 0);
    atomic_store(&together_void, 0);
    for (int i = 0; i < NVICTIM; i++)
        atomic_store(&victim_waited[i], 0);
    struct fut_join js, jv[NVICTIM];
    /* Victims armed before and after the spinner: some are queued
     * behind it whatever the order of the wakes. */
    for (intptr_t i = 0; i < NVICTIM / 2; i++)
        ASSERT_EQ(fut_fiber_spawn(rt, victim, (void *)i, NULL, &jv[i]), 0);
    ASSERT_EQ(fut_fiber_spawn(rt, together_spinner, NULL, NULL, &js), 0);
    for (intptr_t i = NVICTIM / 2; i < NVICTIM; i++)
        ASSERT_EQ(fut_fiber_spawn(rt, victim, (void *)i, NULL, &jv[i]), 0);
    /* The threads' waits as the wake is due (the machine's share is
     * counted from there). */
    struct timespec at = {(time_t)(together_at / 1000000000),
                          (long)(together_at % 1000000000)};
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, NULL);
    waits_read(&together_w0);
    atomic_store(&together_w0_set, 1);
    ASSERT_EQ(fut_block_on(rt, &js.base), 0);
    fut_drop(&js.base);
    int64_t worst = 0, worst_late = 0, worst_waited = 0;
    for (int i = 0; i < NVICTIM; i++) {
        ASSERT_EQ(fut_block_on(rt, &jv[i].base), 0);
        fut_drop(&jv[i].base);
        int64_t late = atomic_load(&victim_late[i]);
        int64_t share = atomic_load(&victim_waited[i]);
        if (late - allowance(share) > worst) {
            worst = late - allowance(share);
            worst_late = late;
            worst_waited = share;
        }
    }
    fut_runtime_free(rt);
    ck_assert_msg(!atomic_load(&together_void),
                  "a task began after the wake it was to sleep until "
                  "(%lld ms ahead): not measured",
                  (long long)TOGETHER_LEAD / MS);
    out[0] = (struct late){"the latest task woken with the spinner",
                           worst_late, worst_waited, LATE_MAX};
    return 1;
}

START_TEST(together)
{
    within_twice(together_once);
}
END_TEST

/* ------------------------------------------------------------------ idle */

/* Time on a CPU so far (ns) of every thread of the process but the
 * spinner and the caller. */
static int64_t others_run(void)
{
    long skip = atomic_load(&spin_tid), self = (long)syscall(SYS_gettid);
    struct waits w;
    waits_read(&w);
    int64_t sum = 0;
    for (int i = 0; i < w.n; i++)
        if (w.tid[i] != skip && w.tid[i] != self)
            sum += w.run[i];
    return sum;
}

/* The other worker and the monitor stay idle beside a busy worker: they
 * wake to look at it (the monitor's tick; on io_uring the rescue's 1 ms
 * looks), not spin. Measured: the other threads' CPU time over 300 ms of
 * the spin, at most IDLE_CPU_MAX of it (a few % when they sleep; on
 * io_uring a ring flag that another thread's pending completions raised
 * kept the idle worker busy: 45-99% of a core in 5 of 6 runs). */
#if defined(FUT_TEST_TSAN) || defined(__SANITIZE_ADDRESS__) ||               \
    defined(STALL_SANITIZED)
#define IDLE_CPU_MAX 40 /* % of one core */
#else
#define IDLE_CPU_MAX 20
#endif

START_TEST(idle_beside_spin)
{
    atomic_store(&spin_tid, 0);
    struct fut_runtime *rt = mt2();
    struct fut_join js;
    ASSERT_EQ(fut_fiber_spawn(rt, spinner, NULL, NULL, &js), 0);
    while (!atomic_load(&spin_tid))
        usleep(1000);
    usleep(100 * 1000); /* the spin under way */
    int64_t t0 = now_ns(), r0 = others_run();
    usleep(300 * 1000);
    int64_t t1 = now_ns(), r1 = others_run();
    ASSERT_EQ(fut_block_on(rt, &js.base), 0);
    fut_drop(&js.base);
    fut_runtime_free(rt);
    int64_t pct = (r1 - r0) * 100 / (t1 - t0);
    ck_assert_msg(pct <= IDLE_CPU_MAX,
                  "the other threads used %lld%% of a core beside a busy "
                  "worker (%lld ms in %lld ms; bound %d%%)",
                  (long long)pct, (long long)(r1 - r0) / MS,
                  (long long)(t1 - t0) / MS, IDLE_CPU_MAX);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("rt_multi_stall");
    TCase *tc = fut_test_tcase(s, "timers");
    tcase_add_test(tc, timers);
    tc = fut_test_tcase(s, "echo");
    tcase_add_test(tc, echo_behind_spin);
    tc = fut_test_tcase(s, "together");
    tcase_add_test(tc, together);
    tc = fut_test_tcase(s, "idle");
    tcase_add_test(tc, idle_beside_spin);
    return fut_test_run(s);
}
