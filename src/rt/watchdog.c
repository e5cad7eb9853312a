/* SPDX-License-Identifier: MIT */
/* The long-poll watchdog: a thread per runtime that reports a task poll
 * still running past the threshold WHILE it runs (kind "long-poll"),
 * naming the task, the thread polling it and the time so far; and the
 * names of tasks as every report and dump shows them (fut__task_label).
 * On in debug builds (threshold: fut_rt_config.slow_poll_ns) and, in any
 * build, when FUT_WATCHDOG_MS asks (include/fut/rt.h).
 *
 * Rules of a slot (struct fut__watch_slot, one per polling thread):
 *   - the polling thread alone writes the first block. A poll is a
 *     seqlock write: fut__watch_begin issues a release fence, stores the
 *     poll's task, names and start (relaxed), then 'seq' = 2n + 1
 *     (release); fut__watch_end stores 'seq' = 2n + 2 (relaxed). The
 *     fence of the next begin orders that end before the next poll's
 *     names;
 *   - the watchdog (and a task dump) reads 'seq' (acquire: pairs with
 *     begin's release store, so the names it reads next are this poll's
 *     or later), the names (relaxed), an acquire fence (pairs with the
 *     next begin's release fence: a name of a later poll makes the
 *     re-read see a later 'seq'), then 'seq' again: equal and odd, the
 *     names are those of the poll still running;
 *   - nobody but the poller dereferences the task: the slot holds what a
 *     report prints. Vtable names and spawn sites are static strings
 *     (string literals, static vtables); a name the user gave (a fiber's,
 *     documented as outliving the fiber only) is copied into 'copy' at
 *     the poll's start, so a report printed after the task was freed
 *     reads only the slot. 'task' is compared, never followed;
 *   - a poll is timed from 'start' (debug builds, which read the clock
 *     for the slow-poll check anyway) or else from the first scan that
 *     saw its 'seq' (a lower bound, off by one period at most): release
 *     builds pay no clock read per poll;
 *   - the second block is the watchdog's: 'long_seq' and 'long_since'
 *     say which poll it found long and since when ('long_since' first,
 *     then 'long_seq' with release; a dump reads 'long_seq' with acquire,
 *     'long_since', then 'seq' and 'long_seq' again);
 *   - slots live in 'struct fut__watch', freed by fut_runtime_free after
 *     the scheduler's shutdown (no thread polls with them any longer)
 *     and after fut__watch_stop joined the watchdog thread.
 * Who scans: the watchdog's own thread, or - on a multi-thread runtime
 * that has a monitor thread (src/rt/multi/monitor.c) - the monitor, at
 * each of its ticks (fut__watch_host before any worker starts, then
 * fut__watch_hosted_scan): one thread watches the workers for both jobs.
 * 'state' (under 'lock'): 0 not started, 1 own thread running, 2
 * stopped (no scan, no report after fut__watch_stop returned: a hosted
 * scan runs under the lock and checks it), 3 hosted.
 * Reports: once when a poll passes the threshold, again at each doubling
 * of it (2x, 4x, ...), through fut__report.
 */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "rt/watchdog.h"

_Thread_local struct fut__watch_slot *fut__tls_watch_slot;
fut__aword fut__label_unwrap_hook;
fut__aword fut__label_name_hook;
fut__aword fut__label_unwrap_vt;
fut__aword fut__label_name_vt;

/* ------------------------------------------------------------ task names */

void fut__task_label(struct fut_task *t, struct fut__task_label *out)
{
    struct fut_future *f = fut__task_future(t);
    fut__label_unwrap_fn unwrap = (fut__label_unwrap_fn)fut__load(
        &fut__label_unwrap_hook, FUT__RELAXED);
    fut__label_name_fn named =
        (fut__label_name_fn)fut__load(&fut__label_name_hook, FUT__RELAXED);
    struct fut_future *in = unwrap ? unwrap(f) : NULL;
    if (in)
        f = in;
    const char *user = named ? named(f) : NULL;
    out->name = user ? user : f->vt->name ? f->vt->name : "?";
    out->user = user != NULL;
#ifdef FUT_DEBUG
    out->file = t->spawn_file;
    out->line = t->spawn_line;
#else
    out->file = NULL;
    out->line = 0;
#endif
}

/* ------------------------------------------------------------ the slots */

/* Copies 's' into the slot's words (atomic: the watchdog may read them). */
static void copy_name(struct fut__watch_slot *ws, const char *s)
{
    for (int i = 0; i < FUT__WATCH_COPY; i++) {
        uintptr_t word = 0;
        size_t n = strnlen(s, sizeof word);
        if (i == FUT__WATCH_COPY - 1 && n == sizeof word)
            n--; /* the last word keeps a NUL */
        memcpy(&word, s, n);
        fut__store(&ws->copy[i], word, FUT__RELAXED);
        if (n < sizeof word)
            return;
        s += n;
    }
}

/* The name of the task to be polled: its vtable's, without a hook call,
 * unless its future is of a type a hook knows (then fut__task_label). */
static const char *begin_name(struct fut_task *t, int *user)
{
    const struct fut_future_vtable *vt = fut__task_future(t)->vt;
    uintptr_t v = (uintptr_t)vt;
    *user = 0;
    if (v == fut__load(&fut__label_unwrap_vt, FUT__RELAXED) ||
        v == fut__load(&fut__label_name_vt, FUT__RELAXED)) {
        struct fut__task_label l;
        fut__task_label(t, &l);
        *user = l.user;
        return l.name;
    }
    return vt->name ? vt->name : "?";
}

void fut__watch_begin(struct fut__watch_slot *ws, struct fut_task *t,
                      const struct fut__task_label *known, int64_t t0)
{
    int user = known ? known->user : 0;
    const char *name = known ? known->name : begin_name(t, &user);
    /* Release fence: the last poll's end before these (see the rules). */
    fut__fence(FUT__RELEASE);
    fut__store(&ws->task, (uintptr_t)t, FUT__RELAXED);
    if (user)
        copy_name(ws, name);
    fut__store(&ws->name, user ? 0 : (uintptr_t)name, FUT__RELAXED);
#ifdef FUT_DEBUG
    /* Release builds record no spawn site or start: they stay 0. */
    fut__store(&ws->file, (uintptr_t)t->spawn_file, FUT__RELAXED);
    fut__store(&ws->line, (uintptr_t)t->spawn_line, FUT__RELAXED);
    fut__store(&ws->start, (uintptr_t)t0, FUT__RELAXED);
#else
    (void)t0;
#endif
    /* Release: the names before the poll is seen (pairs: readers). */
    fut__store(&ws->seq, fut__load(&ws->seq, FUT__RELAXED) + 1, FUT__RELEASE);
}

struct fut__watch_slot *fut__watch_bind(struct fut__watch *w, int i)
{
    struct fut__watch_slot *prev = fut__tls_watch_slot;
    struct fut__watch_slot *ws = &w->slots[i];
    fut__store(&ws->tid, (uintptr_t)syscall(SYS_gettid), FUT__RELAXED);
    fut__tls_watch_slot = ws;
    return prev;
}

void fut__watch_unbind(struct fut__watch_slot *prev)
{
    fut__tls_watch_slot = prev;
}

/* A consistent read of the poll running in 'ws' (the rules' seqlock
 * read): 1 with 'what' = "'name' (spawned at file:line)" when the poll
 * 'seq' still runs. */
static int read_poll(struct fut__watch_slot *ws, uintptr_t seq, char *what,
                     size_t len)
{
    uintptr_t name = fut__load(&ws->name, FUT__RELAXED);
    uintptr_t file = fut__load(&ws->file, FUT__RELAXED);
    uintptr_t line = fut__load(&ws->line, FUT__RELAXED);
    char copy[FUT__WATCH_COPY * sizeof(uintptr_t)];
    for (int i = 0; i < FUT__WATCH_COPY; i++) {
        uintptr_t word = fut__load(&ws->copy[i], FUT__RELAXED);
        memcpy(copy + i * sizeof word, &word, sizeof word);
    }
    /* Acquire: pairs with the next begin's release fence. */
    fut__fence(FUT__ACQUIRE);
    if (fut__load(&ws->seq, FUT__RELAXED) != seq)
        return 0;
    copy[sizeof copy - 1] = 0;
    const char *n = name ? (const char *)name : copy;
    if (file)
        snprintf(what, len, "'%s' (spawned at %s:%d)", n, (const char *)file,
                 (int)line);
    else
        snprintf(what, len, "'%s'", n);
    return 1;
}

/* ------------------------------------------------------- the watchdog */

/* "worker 1 of 2 (thread 4242)" / "the runtime's thread (thread 4242)". */
static void describe_thread(struct fut__watch *w, int i, char *buf,
                            size_t len)
{
    long tid = (long)fut__load(&w->slots[i].tid, FUT__RELAXED);
    if (w->multi)
        snprintf(buf, len, "worker %d of %d (thread %ld)", i, w->n, tid);
    else
        snprintf(buf, len, "the runtime's thread (thread %ld)", tid);
}

static void report(struct fut__watch *w, int i, const char *what,
                   int64_t elapsed)
{
    char who[96];
    describe_thread(w, i, who, sizeof who);
    fut__report("long-poll",
                "task %s has been in one poll for %" PRId64
                " ms so far, on %s (threshold %" PRId64
                " ms): a poll must not block",
                what, elapsed / 1000000, who, w->threshold_ns / 1000000);
}

/* One look at slot 'i' (the watchdog thread); returns 0 when the slot
 * did not move since the last look and is between polls. */
static int scan_slot(struct fut__watch *w, int i, int64_t now)
{
    struct fut__watch_slot *ws = &w->slots[i];
    /* Acquire: pairs with begin's release store (see the rules). */
    uintptr_t seq = fut__load(&ws->seq, FUT__ACQUIRE);
    if (!(seq & 1) || seq != ws->seen_seq) {
        int moved = seq != ws->seen_seq;
        ws->seen_seq = seq; /* idle, or a new poll: time it from now */
        ws->seen_at = now;
        ws->next_ns = w->threshold_ns;
        return moved || (seq & 1);
    }
    int64_t start = (int64_t)fut__load(&ws->start, FUT__RELAXED);
    if (!start || start > ws->seen_at)
        start = ws->seen_at;
    int64_t elapsed = now - start;
    if (elapsed < ws->next_ns)
        return 1;
    char what[256];
    if (!read_poll(ws, seq, what, sizeof what))
        return 1; /* it ended meanwhile */
    fut__store(&ws->long_since, (uintptr_t)start, FUT__RELAXED);
    /* Release: 'long_since' before (pairs with the dump's acquire). */
    fut__store(&ws->long_seq, seq, FUT__RELEASE);
    while (ws->next_ns <= elapsed)
        ws->next_ns *= 2;
    report(w, i, what, elapsed);
    return 1;
}

/* One look at every slot; 1 when one is in a poll or moved. */
static int scan_all(struct fut__watch *w, int64_t now)
{
    int busy = 0;
    for (int i = 0; i < w->n; i++)
        busy |= scan_slot(w, i, now);
    return busy;
}

/* Wakes every 'period_ns' while tasks are polled; a runtime whose slots
 * did not move since the last look (idle) is looked at less often, the
 * interval doubling up to the threshold: an idle runtime costs the
 * watchdog one wake per threshold. A poll that starts meanwhile is seen
 * one interval late at most (debug builds time it from its real start;
 * release builds report a lower bound, see the rules). */
static void *watch_main(void *arg)
{
    struct fut__watch *w = arg;
    int64_t period = w->period_ns;
    /* Acquire: pairs with fut__watch_stop's release store. */
    while (!fut__load(&w->stop, FUT__ACQUIRE)) {
        fut__parker_park(&w->parker, period);
        if (fut__load(&w->stop, FUT__ACQUIRE))
            break;
        int busy = scan_all(w, fut_now_ns());
        period = busy ? w->period_ns : 2 * period;
        if (period > w->threshold_ns)
            period = w->threshold_ns > w->period_ns ? w->threshold_ns
                                                    : w->period_ns;
    }
    return NULL;
}

int fut__watch_new(int n, int64_t threshold_ns, int multi,
                   struct fut__watch **out)
{
    struct fut__watch *w = fut__alloc(sizeof *w);
    if (!w)
        return FUT_ENOMEM;
    memset(w, 0, sizeof *w);
    w->bytes = (size_t)(n + 1) * sizeof(struct fut__watch_slot);
    w->mem = fut__alloc(w->bytes);
    if (!w->mem) {
        fut__free(w, sizeof *w);
        return FUT_ENOMEM;
    }
    fut__mutex_init(&w->lock);
    memset(w->mem, 0, w->bytes);
    uintptr_t a = ((uintptr_t)w->mem + 63) & ~(uintptr_t)63;
    w->slots = (struct fut__watch_slot *)a;
    w->n = n;
    w->multi = multi;
    w->threshold_ns = threshold_ns;
    w->period_ns = threshold_ns / 4 > 1000000 ? threshold_ns / 4 : 1000000;
    for (int i = 0; i < n; i++)
        w->slots[i].next_ns = threshold_ns;
    fut__parker_init(&w->parker);
    *out = w;
    return 0;
}

/* Starts the thread with every signal blocked (they are the
 * application's), named for top(1) and debuggers. */
static void start_locked(struct fut__watch *w)
{
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int r = pthread_create(&w->thread, NULL, watch_main, w);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (r != 0) {
        w->state = 2; /* no watchdog; said once */
        fut__report("long-poll",
                    "the watchdog thread could not be started (%s): long "
                    "polls are not reported while they run",
                    fut_strerror(-r));
        return;
    }
    w->state = 1;
    pthread_setname_np(w->thread, "fut-watchdog");
}

void fut__watch_start(struct fut__watch *w)
{
    if (fut__load(&w->started, FUT__RELAXED)) /* a hint: the lock decides */
        return;
    fut__mutex_lock(&w->lock);
    if (w->state == 0)
        start_locked(w);
    fut__store(&w->started, 1, FUT__RELAXED);
    fut__mutex_unlock(&w->lock);
}

void fut__watch_host(struct fut__watch *w)
{
    fut__mutex_lock(&w->lock);
    if (w->state == 0)
        w->state = 3;
    fut__mutex_unlock(&w->lock);
}

void fut__watch_hosted_scan(struct fut__watch *w)
{
    /* The lock orders this scan against fut__watch_stop: once stop
     * returned, no report is made (it set 'state' 2 under the lock). The
     * host's tick is the period; the scan is 'n' slot loads. */
    fut__mutex_lock(&w->lock);
    if (w->state == 3)
        scan_all(w, fut_now_ns());
    fut__mutex_unlock(&w->lock);
}

void fut__watch_stop(struct fut__watch *w)
{
    fut__mutex_lock(&w->lock);
    int running = w->state == 1;
    w->state = 2; /* a later start does nothing */
    fut__mutex_unlock(&w->lock);
    if (!running)
        return;
    /* Release: pairs with the thread's acquire loads. */
    fut__store(&w->stop, 1, FUT__RELEASE);
    fut__parker_unpark(&w->parker);
    pthread_join(w->thread, NULL);
}

void fut__watch_free(struct fut__watch *w)
{
    fut__mutex_destroy(&w->lock);
    fut__free(w->mem, w->bytes);
    fut__free(w, sizeof *w);
}

int fut__watch_long_poll(struct fut__watch *w, int i,
                         struct fut__watch_long *out)
{
    struct fut__watch_slot *ws = &w->slots[i];
    /* Acquire: pairs with the watchdog's release store. */
    uintptr_t ls = fut__load(&ws->long_seq, FUT__ACQUIRE);
    int64_t since = (int64_t)fut__load(&ws->long_since, FUT__RELAXED);
    /* Acquire: pairs with begin's release store (the rules). */
    uintptr_t seq = fut__load(&ws->seq, FUT__ACQUIRE);
    if (!ls || seq != ls)
        return 0; /* not in the poll that was found long */
    out->task = fut__load(&ws->task, FUT__RELAXED);
    if (!read_poll(ws, seq, out->what, sizeof out->what))
        return 0;
    if (fut__load(&ws->long_seq, FUT__RELAXED) != ls)
        return 0; /* 'since' may be another poll's */
    out->elapsed_ns = fut_now_ns() - since;
    out->slot = i;
    return 1;
}
