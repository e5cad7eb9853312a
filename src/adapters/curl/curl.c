/* SPDX-License-Identifier: MIT */
/* The libcurl adapter (include/fut/curl.h, library libfut_curl): a CURLM
 * driven by a fut runtime through the public API only - fut_fd_register
 * for curl's sockets, fut_sleep for curl's timer, fut_spawn for the
 * tasks that drive them.
 *
 * Rules of the multi (the state machine of this file):
 *   - one pthread mutex per multi, 'mu', serializes every curl_multi_*
 *     call and every field below; curl's callbacks (socket, timer, and
 *     the easy handles' own) run inside those calls, so they run with
 *     'mu' held and never take it;
 *   - 'refs' counts the owner (until fut_curl_multi_free), the timer
 *     task, each socket task, and each transfer from its add until its
 *     poll saw it finished or it was dropped; the last release frees the
 *     multi, after unlocking (nobody else can reach it then);
 *   - a socket record ('struct csock') is made by the socket callback
 *     the first time curl names a socket: fut_fd_register, then a task
 *     spawned to drive it; 'byfd' maps the fd to it while curl uses it.
 *     What is registered is not curl's fd but a duplicate of it ('dfd',
 *     ours): curl 7.88 may close a socket before its CURL_POLL_REMOVE
 *     (seen in curl_multi_remove_handle of a transfer waiting for its
 *     response: the close in multi_done, the REMOVE after), and the
 *     duplicate keeps the file - and the registration - valid until the
 *     REMOVE. It ends when both sides let go: curl's side at
 *     CURL_POLL_REMOVE or at fut_curl_multi_free ('curl_done': the
 *     duplicate is deregistered and closed there), the task's
 *     side when the task ends or is dropped ('task_done'). Whoever comes
 *     second frees it;
 *   - a socket task awaits readiness for what curl asked ('want'); the
 *     socket callback changing 'want' wakes it ('waker') so it awaits the
 *     new interest. On readiness it calls curl_multi_socket_action, then
 *     reads curl's messages (transfers done). Readiness clearing: fd.h's
 *     readiness is edge-triggered and cached; curl may return before it
 *     read or wrote until EAGAIN, so after each action the task asks
 *     poll(2) (timeout 0) and clears, with the tick of the wait, only the
 *     directions that are not ready now - a direction still ready is
 *     acted on again at the next turn (what curl expects: level
 *     semantics), and an edge that comes after the poll is newer than
 *     the tick and survives the clear (fd.h's guard);
 *   - the timer: curl's timer callback stores the deadline ('deadline',
 *     -1 = none) and wakes the timer task, which sleeps until it and
 *     then calls curl_multi_socket_action(CURL_SOCKET_TIMEOUT);
 *   - a transfer: its first poll adds the easy handle (its CURLOPT_PRIVATE
 *     names the transfer meanwhile) and links it on 'transfers'; the one
 *     that finishes it (curl's CURLMSG_DONE, or fut_curl_multi_free)
 *     removes the handle, sets 'state' to DONE and wakes it; its drop
 *     before that removes the handle itself, under 'mu', so curl calls
 *     none of its callbacks after the drop returns.
 * Why a task per socket: a readiness event costs one task wake and one
 * poll, whatever the number of sockets (no scan over a set of futures);
 * thousands of transfers on one multi are thousands of small tasks at
 * most (and curl reuses connections, so usually far fewer). On the
 * multi-thread runtime the tasks may run on several workers; curl's calls
 * serialize on 'mu' anyway (libcurl's multi is single-threaded), so a
 * worker may wait for 'mu' while another runs curl - bounded by one
 * curl_multi_socket_action.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fut/curl.h"
#include "fut/fd.h"
#include "fut/fiber.h"
#include "fut/rt.h"
#include "fut/time.h"

/* A NULL where the header forbids it: debug builds abort naming the call
 * (docs/design.md, "Programming errors"); release builds return. */
#ifdef FUT_DEBUG
#define NULL_ARG(fn, what) fut__misuse(fn, what, __builtin_return_address(0))
#else
#define NULL_ARG(fn, what) ((void)0)
#endif

/* Transfer states ('state', under 'mu'). */
enum { T_INIT = 0, T_RUNNING = 1, T_DONE = 2, T_OVER = 3 };

struct csock;

struct fut_curl_multi {
    pthread_mutex_t mu;     /* serializes everything below and curl */
    CURLM *cm;              /* NULL once fut_curl_multi_free ran */
    struct fut_runtime *rt; /* the runtime driving it */
    int refs;               /* see the rules */
    int closed;             /* fut_curl_multi_free ran */
    struct fut_curl_transfer *transfers; /* running, linked by next */
    struct csock *socks;                 /* curl's live sockets */
    struct csock **byfd; /* the live socket of each fd number, or NULL */
    int nbyfd;           /* entries of 'byfd' */
    int64_t deadline;    /* curl's timer; -1 = none */
    struct fut_waker timer_waker; /* the timer task's */
    struct fut_curl_stats st;     /* counters */
};

struct csock {
    struct fut_curl_multi *m;
    struct csock *prev, *next; /* m->socks while !curl_done */
    int fd;                    /* curl's socket */
    int dfd;                   /* our duplicate of it (registered) */
    struct fut_fd *h;          /* NULL once deregistered */
    unsigned want;             /* FUT_FD_* bits curl asks for */
    int curl_done;             /* REMOVE seen, or the multi freed */
    int task_done;             /* the task ended or was dropped */
    struct fut_waker waker;    /* the socket task's */
};

/* ---------------------------------------------------------- references */

static void multi_destroy(struct fut_curl_multi *m)
{
    pthread_mutex_destroy(&m->mu);
    free(m->byfd);
    free(m);
}

/* The live socket record of 'fd', or NULL. */
static struct csock *sock_of(struct fut_curl_multi *m, int fd)
{
    return fd >= 0 && fd < m->nbyfd ? m->byfd[fd] : NULL;
}

/* Makes room for fd in 'byfd': 0, or -1 (no memory). */
static int byfd_grow(struct fut_curl_multi *m, int fd)
{
    if (fd < m->nbyfd)
        return 0;
    int n = m->nbyfd ? m->nbyfd : 64;
    while (n <= fd)
        n *= 2;
    struct csock **b = realloc(m->byfd, (size_t)n * sizeof *b);
    if (!b)
        return -1;
    memset(b + m->nbyfd, 0, (size_t)(n - m->nbyfd) * sizeof *b);
    m->byfd = b;
    m->nbyfd = n;
    return 0;
}

/* Unlocks 'mu' and releases one reference; the last frees the multi. */
static void unlock_unref(struct fut_curl_multi *m)
{
    int last = --m->refs == 0;
    pthread_mutex_unlock(&m->mu);
    if (last)
        multi_destroy(m);
}

/* ----------------------------------------------------------- transfers */

static void transfer_unlink(struct fut_curl_multi *m,
                            struct fut_curl_transfer *t)
{
    if (t->prev)
        t->prev->next = t->next;
    else
        m->transfers = t->next;
    if (t->next)
        t->next->prev = t->prev;
    t->prev = t->next = NULL;
    m->st.transfers--;
}

/* Takes a running transfer out of curl (its callbacks are over once this
 * returns) and gives the easy handle its CURLOPT_PRIVATE back. */
static void transfer_detach(struct fut_curl_multi *m,
                            struct fut_curl_transfer *t)
{
    curl_multi_remove_handle(m->cm, t->easy);
    curl_easy_setopt(t->easy, CURLOPT_PRIVATE, t->user_private);
    transfer_unlink(m, t);
}

/* Finishes a running transfer with 'result' / 'code' and wakes it. */
static void transfer_finish(struct fut_curl_multi *m,
                            struct fut_curl_transfer *t, int result,
                            CURLcode code)
{
    transfer_detach(m, t);
    t->result = result;
    t->code = code;
    t->state = T_DONE;
    if (fut_waker_is_set(&t->waker))
        fut_waker_wake(&t->waker);
}

/* Reads curl's messages: each CURLMSG_DONE finishes its transfer. */
static void drain_messages(struct fut_curl_multi *m)
{
    CURLMsg *msg;
    int left;
    while ((msg = curl_multi_info_read(m->cm, &left))) {
        if (msg->msg != CURLMSG_DONE)
            continue;
        /* Copied out first: remove_handle ends 'msg'. */
        CURL *easy = msg->easy_handle;
        CURLcode code = msg->data.result;
        void *p = NULL;
        curl_easy_getinfo(easy, CURLINFO_PRIVATE, &p);
        if (!p) { /* not ours (a handle added behind our back) */
            curl_multi_remove_handle(m->cm, easy);
            continue;
        }
        m->st.completed++;
        transfer_finish(m, (struct fut_curl_transfer *)p, 0, code);
    }
}

/* ------------------------------------------------------------- sockets */

struct sock_task {
    struct fut_future base;
    struct csock *s;        /* NULL once the task ended */
    struct fut_fd_ready rd; /* the wait, while 'waiting' */
    int waiting;            /* rd is initialised */
    unsigned waiting_for;   /* its interest */
};

/* Stops watching 's': deregisters and closes our duplicate. */
static void sock_unwatch(struct csock *s)
{
    if (s->h) {
        fut_fd_deregister(s->h);
        s->h = NULL;
        close(s->dfd);
        s->dfd = -1;
    }
}

/* curl is done with 's': deregister (before curl closes the fd), unlink,
 * and free it if its task is gone too, else wake the task to end. */
static void sock_curl_done(struct csock *s)
{
    struct fut_curl_multi *m = s->m;
    sock_unwatch(s);
    s->curl_done = 1;
    m->byfd[s->fd] = NULL;
    if (s->prev)
        s->prev->next = s->next;
    else
        m->socks = s->next;
    if (s->next)
        s->next->prev = s->prev;
    s->prev = s->next = NULL;
    m->st.sockets--;
    if (s->task_done) {
        free(s);
        return;
    }
    if (fut_waker_is_set(&s->waker))
        fut_waker_wake_by_ref(&s->waker);
}

/* The task is done with 's' (it ended, or was dropped): release the wait
 * and, if curl is done too, the record. */
static void sock_task_done(struct sock_task *t)
{
    struct csock *s = t->s;
    if (t->waiting) {
        fut_drop(&t->rd.base);
        t->waiting = 0;
    }
    if (!s->curl_done) {
        /* Dropped while curl still uses the socket (a runtime shutdown):
         * nothing will drive it any more; stop watching it. */
        sock_unwatch(s);
    }
    fut_waker_drop(&s->waker);
    s->task_done = 1;
    t->s = NULL;
    if (s->curl_done)
        free(s);
}

/* What fd.h reported, as curl's CURL_CSELECT_* bits. */
static int cselect_of(int bits)
{
    if (bits < 0)
        return CURL_CSELECT_ERR;
    int ev = 0;
    if (bits & FUT_FD_READABLE)
        ev |= CURL_CSELECT_IN;
    if (bits & FUT_FD_WRITABLE)
        ev |= CURL_CSELECT_OUT;
    if (bits & FUT_FD_ERROR)
        ev |= CURL_CSELECT_ERR;
    return ev;
}

/* After an action: forget the readiness of the directions poll(2) says
 * are not ready now (see the rules: curl need not stop at EAGAIN). A
 * failed poll keeps it: the next turn asks curl again. */
static void sock_clear_drained(struct csock *s, uint32_t tick)
{
    fut_fd_clear_if_blocked(s->h, FUT_FD_READABLE | FUT_FD_WRITABLE, tick);
}

static int sock_poll(struct fut_future *f, struct fut_context *cx)
{
    struct sock_task *t = (struct sock_task *)f;
    struct csock *s = t->s;
    struct fut_curl_multi *m = s->m;
    pthread_mutex_lock(&m->mu);
    for (;;) {
        if (s->curl_done || m->closed) {
            sock_task_done(t);
            unlock_unref(m);
            return FUT_READY;
        }
        fut_waker_set(&s->waker, &cx->waker);
        if (t->waiting && t->waiting_for != s->want) {
            fut_drop(&t->rd.base); /* curl changed its mind */
            t->waiting = 0;
        }
        if (!s->want) {
            pthread_mutex_unlock(&m->mu);
            return FUT_PENDING; /* the socket callback wakes us */
        }
        if (!t->waiting) {
            fut_fd_ready_init(&t->rd, s->h, s->want);
            t->waiting = 1;
            t->waiting_for = s->want;
        }
        if (fut_poll(&t->rd.base, cx) == FUT_PENDING) {
            pthread_mutex_unlock(&m->mu);
            return FUT_PENDING;
        }
        int bits = t->rd.result;
        uint32_t tick = t->rd.tick;
        fut_drop(&t->rd.base);
        t->waiting = 0;
        if (bits == FUT_ECANCELED)
            continue; /* deregistered: curl_done or closed is set */
        /* Cooperative budget: readiness is cached, so yielding here loses
         * nothing (the next poll sees the same bits). */
        if (!fut_coop_proceed(cx)) {
            pthread_mutex_unlock(&m->mu);
            return FUT_PENDING;
        }
        int running;
        m->st.actions++;
        curl_multi_socket_action(m->cm, s->fd, cselect_of(bits), &running);
        drain_messages(m);
        if (!s->curl_done && s->h && bits > 0)
            sock_clear_drained(s, tick);
    }
}

static void sock_drop(struct fut_future *f)
{
    struct sock_task *t = (struct sock_task *)f;
    if (!t->s)
        return; /* ended by its poll */
    struct fut_curl_multi *m = t->s->m;
    pthread_mutex_lock(&m->mu);
    sock_task_done(t);
    unlock_unref(m);
}

static const struct fut_future_vtable sock_vt = {sock_poll, sock_drop,
                                                 "curl_socket", NULL};

/* A new socket of curl: register it, spawn its task. NULL on failure. */
static struct csock *sock_new(struct fut_curl_multi *m, int fd)
{
    if (fut_runtime_current() != m->rt)
        return NULL; /* fut_fd_register would pick another runtime */
    if (fd < 0 || byfd_grow(m, fd) < 0)
        return NULL;
    struct csock *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->m = m;
    s->fd = fd;
    s->dfd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (s->dfd < 0 || fut_fd_register(s->dfd, &s->h) < 0) {
        if (s->dfd >= 0)
            close(s->dfd);
        free(s);
        return NULL;
    }
    struct sock_task t;
    memset(&t, 0, sizeof t);
    fut_future_init(&t.base, &sock_vt);
    t.s = s;
    if (fut_spawn(m->rt, &t, sizeof t, NULL) < 0) {
        sock_unwatch(s);
        free(s);
        return NULL;
    }
    m->refs++; /* the task's */
    s->next = m->socks;
    if (m->socks)
        m->socks->prev = s;
    m->socks = s;
    m->byfd[fd] = s;
    m->st.sockets++;
    return s;
}

/* CURLMOPT_SOCKETFUNCTION (runs under 'mu', inside a curl call). */
static int on_socket(CURL *easy, curl_socket_t fd, int what, void *userp,
                     void *socketp)
{
    struct fut_curl_multi *m = userp;
    /* The record is looked up by fd, not taken from 'socketp' (which
     * this adapter never sets with curl_multi_assign): 'byfd' holds the
     * live record of each fd number, and a REMOVE for a number without
     * one is ignored. */
    struct csock *s = sock_of(m, fd);
    (void)easy;
    (void)socketp;
    if (what == CURL_POLL_REMOVE) {
        if (s)
            sock_curl_done(s); /* deregistered before curl closes fd */
        return 0;
    }
    if (!s) {
        if (m->closed)
            return 0;
        s = sock_new(m, fd);
        if (!s)
            return -1; /* curl fails the transfers of this socket */
    }
    unsigned want = 0;
    if (what & CURL_POLL_IN)
        want |= FUT_FD_READABLE;
    if (what & CURL_POLL_OUT)
        want |= FUT_FD_WRITABLE;
    if (want != s->want) {
        s->want = want;
        if (fut_waker_is_set(&s->waker))
            fut_waker_wake_by_ref(&s->waker);
    }
    return 0;
}

/* --------------------------------------------------------------- timer */

struct timer_task {
    struct fut_future base;
    struct fut_curl_multi *m; /* NULL once the task ended */
    struct fut_sleep sleep;   /* while 'armed' */
    int armed;
    int64_t armed_for; /* the sleep's deadline */
};

/* CURLMOPT_TIMERFUNCTION (runs under 'mu', inside a curl call): store the
 * deadline; the timer task acts on it (curl forbids calling it back from
 * here). */
static int on_timer(CURLM *cm, long ms, void *userp)
{
    struct fut_curl_multi *m = userp;
    (void)cm;
    m->deadline = ms < 0 ? -1 : fut_time_now() + (int64_t)ms * 1000000;
    if (fut_waker_is_set(&m->timer_waker))
        fut_waker_wake_by_ref(&m->timer_waker);
    return 0;
}

static void timer_disarm(struct timer_task *t)
{
    if (t->armed) {
        fut_drop(&t->sleep.base);
        t->armed = 0;
    }
}

static int timer_poll(struct fut_future *f, struct fut_context *cx)
{
    struct timer_task *t = (struct timer_task *)f;
    struct fut_curl_multi *m = t->m;
    pthread_mutex_lock(&m->mu);
    for (;;) {
        if (m->closed) {
            timer_disarm(t);
            fut_waker_drop(&m->timer_waker);
            t->m = NULL;
            unlock_unref(m);
            return FUT_READY;
        }
        fut_waker_set(&m->timer_waker, &cx->waker);
        if (m->deadline < 0) {
            timer_disarm(t);
            pthread_mutex_unlock(&m->mu);
            return FUT_PENDING; /* on_timer wakes us */
        }
        if (t->armed && t->armed_for != m->deadline)
            timer_disarm(t);
        if (!t->armed) {
            fut_sleep_until_init(&t->sleep, m->deadline);
            t->armed = 1;
            t->armed_for = m->deadline;
        }
        if (fut_poll(&t->sleep.base, cx) == FUT_PENDING) {
            pthread_mutex_unlock(&m->mu);
            return FUT_PENDING;
        }
        timer_disarm(t);
        m->deadline = -1;
        int running;
        m->st.actions++;
        curl_multi_socket_action(m->cm, CURL_SOCKET_TIMEOUT, 0, &running);
        drain_messages(m);
    }
}

static void timer_drop(struct fut_future *f)
{
    struct timer_task *t = (struct timer_task *)f;
    struct fut_curl_multi *m = t->m;
    if (!m)
        return;
    pthread_mutex_lock(&m->mu);
    timer_disarm(t);
    fut_waker_drop(&m->timer_waker);
    t->m = NULL;
    unlock_unref(m);
}

static const struct fut_future_vtable timer_vt = {timer_poll, timer_drop,
                                                  "curl_timer", NULL};

/* --------------------------------------------------------------- multi */

int fut_curl_multi_new(struct fut_curl_multi **out)
{
    struct fut_runtime *rt = fut_runtime_current();
    if (!out || !rt || strcmp(fut_runtime_backend(rt), "none") == 0)
        return FUT_EINVAL;
    struct fut_curl_multi *m = calloc(1, sizeof *m);
    if (!m)
        return FUT_ENOMEM;
    if (pthread_mutex_init(&m->mu, NULL) != 0) {
        free(m);
        return FUT_ENOMEM;
    }
    m->cm = curl_multi_init();
    if (!m->cm) {
        multi_destroy(m);
        return FUT_ENOMEM;
    }
    m->rt = rt;
    m->deadline = -1;
    m->refs = 2; /* the owner's and the timer task's */
    curl_multi_setopt(m->cm, CURLMOPT_SOCKETFUNCTION, on_socket);
    curl_multi_setopt(m->cm, CURLMOPT_SOCKETDATA, m);
    curl_multi_setopt(m->cm, CURLMOPT_TIMERFUNCTION, on_timer);
    curl_multi_setopt(m->cm, CURLMOPT_TIMERDATA, m);
    struct timer_task t;
    memset(&t, 0, sizeof t);
    fut_future_init(&t.base, &timer_vt);
    t.m = m;
    int r = fut_spawn(rt, &t, sizeof t, NULL);
    if (r < 0) {
        curl_multi_cleanup(m->cm);
        multi_destroy(m);
        return r;
    }
    *out = m;
    return 0;
}

void fut_curl_multi_free(struct fut_curl_multi *m)
{
    if (!m)
        return;
    pthread_mutex_lock(&m->mu);
    m->closed = 1;
    while (m->transfers)
        transfer_finish(m, m->transfers, FUT_ECANCELED, CURLE_OK);
    /* Stop watching first: curl_multi_cleanup closes the sockets, and may
     * or may not say CURL_POLL_REMOVE. */
    for (struct csock *s = m->socks; s; s = s->next)
        sock_unwatch(s);
    curl_multi_cleanup(m->cm);
    m->cm = NULL;
    while (m->socks)
        sock_curl_done(m->socks);
    if (fut_waker_is_set(&m->timer_waker))
        fut_waker_wake_by_ref(&m->timer_waker);
    unlock_unref(m);
}

CURLM *fut_curl_multi_handle(struct fut_curl_multi *m)
{
    return m ? m->cm : NULL;
}

void fut_curl_multi_stats(struct fut_curl_multi *m,
                          struct fut_curl_stats *out)
{
    if (!m || !out) {
        NULL_ARG("fut_curl_multi_stats", "'m' or 'out' is NULL");
        return;
    }
    pthread_mutex_lock(&m->mu);
    *out = m->st;
    pthread_mutex_unlock(&m->mu);
}

/* ------------------------------------------------------------ transfer */

/* The first poll: add the easy handle. FUT_PENDING, or READY with an
 * error in 'result'. Under 'mu'. */
static int transfer_start(struct fut_curl_multi *m,
                          struct fut_curl_transfer *t, struct fut_context *cx)
{
    if (m->closed) {
        t->result = FUT_ECANCELED;
        t->state = T_OVER;
        return FUT_READY;
    }
    char *priv = NULL;
    curl_easy_getinfo(t->easy, CURLINFO_PRIVATE, &priv);
    t->user_private = priv;
    curl_easy_setopt(t->easy, CURLOPT_PRIVATE, (void *)t);
    CURLMcode rc = curl_multi_add_handle(m->cm, t->easy);
    if (rc != CURLM_OK) {
        curl_easy_setopt(t->easy, CURLOPT_PRIVATE, t->user_private);
        t->result = rc == CURLM_OUT_OF_MEMORY ? FUT_ENOMEM : FUT_EINVAL;
        t->state = T_OVER;
        return FUT_READY;
    }
    t->next = m->transfers;
    if (m->transfers)
        m->transfers->prev = t;
    m->transfers = t;
    m->st.transfers++;
    m->refs++; /* the transfer's, until its poll saw it end or its drop */
    t->held = 1;
    t->state = T_RUNNING;
    fut_waker_set(&t->waker, &cx->waker);
    return FUT_PENDING;
}

static int transfer_poll(struct fut_future *f, struct fut_context *cx)
{
    struct fut_curl_transfer *t = (struct fut_curl_transfer *)f;
    struct fut_curl_multi *m = t->multi;
    if (!t->easy) {
        t->result = FUT_EINVAL;
        return FUT_READY;
    }
    pthread_mutex_lock(&m->mu);
    if (t->state == T_INIT) {
        int r = transfer_start(m, t, cx);
        pthread_mutex_unlock(&m->mu);
        return r;
    }
    if (t->state == T_RUNNING) {
        fut_waker_set(&t->waker, &cx->waker);
        pthread_mutex_unlock(&m->mu);
        return FUT_PENDING;
    }
    t->state = T_OVER; /* DONE: its finisher set the output */
    fut_waker_drop(&t->waker);
    t->held = 0;
    unlock_unref(m);
    return FUT_READY;
}

static void transfer_drop(struct fut_future *f)
{
    struct fut_curl_transfer *t = (struct fut_curl_transfer *)f;
    if (!t->held)
        return; /* never added, or over */
    struct fut_curl_multi *m = t->multi;
    pthread_mutex_lock(&m->mu);
    if (t->state == T_RUNNING)
        transfer_detach(m, t); /* no callback of it after this */
    t->state = T_OVER;
    fut_waker_drop(&t->waker);
    t->held = 0;
    unlock_unref(m);
}

static const struct fut_future_vtable transfer_vt = {
    transfer_poll, transfer_drop, "curl_transfer", NULL};

void fut_curl_transfer_init(struct fut_curl_transfer *t,
                            struct fut_curl_multi *m, CURL *easy)
{
    if (!t) {
        NULL_ARG("fut_curl_transfer_init", "'t' is NULL");
        return;
    }
    fut_future_init(&t->base, &transfer_vt);
    t->multi = m;
    t->easy = m ? easy : NULL;
    t->prev = t->next = NULL;
    t->waker.data = NULL;
    t->waker.vt = NULL;
    t->user_private = NULL;
    t->state = T_INIT;
    t->held = 0;
    t->result = 0;
    t->code = CURLE_OK;
}

int fut_curl_perform_at(struct fut_curl_multi *m, CURL *easy, CURLcode *code,
                        const char *file, int line)
{
    struct fut_curl_transfer t;
    fut_curl_transfer_init(&t, m, easy);
    int r = fut_await_at(&t.base, file, line);
    fut_drop(&t.base); /* outside a fiber await left it untouched */
    if (r != 0)
        return r;
    if (t.result == 0 && code)
        *code = t.code;
    return t.result;
}
