/* SPDX-License-Identifier: MIT */
/* The long-poll watchdog (src/rt/watchdog.c): the per-thread slots the
 * polling threads publish their poll in, the poll start and end hooks of
 * task.c, and the names of tasks as reports and dumps show them. */
#ifndef FUT_RT_WATCHDOG_H
#define FUT_RT_WATCHDOG_H

#include <pthread.h>

#include "platform/park.h"
#include "rt/rt_internal.h"
#include "util/mutex.h"

/* ------------------------------------------------------------ task names */

/* What a task is called in reports and dumps: the name the user gave it
 * (a fiber's), else the vtable name of its future (a scope child's: the
 * future it wraps), and its spawn site (debug builds; NULL otherwise).
 * 'name' is the user's memory when 'user' is set (a fiber's name may
 * die with the fiber): whoever keeps it past the poll copies it. */
struct fut__task_label {
    const char *name;
    int user;
    const char *file;
    int line;
};

/* Fills 'out' for 't'. On a thread that keeps 't' alive (its poller, a
 * dump walking its list). */
void fut__task_label(struct fut_task *t, struct fut__task_label *out);

/* Hooks of the layers above, each set once (relaxed: it only ever
 * changes from 0 to the one function, before the first task that needs
 * it is spawned): the scope layer's unwrap (a scope child's wrapper ->
 * the future it wraps, else NULL) and the fiber layer's name (a fiber's
 * name, else NULL). */
typedef struct fut_future *(*fut__label_unwrap_fn)(struct fut_future *f);
typedef const char *(*fut__label_name_fn)(struct fut_future *f);
extern fut__aword fut__label_unwrap_hook;
extern fut__aword fut__label_name_hook;
/* The vtable each hook knows (the scope child's wrapper, the fiber's),
 * set with it: a task whose future is of another type is named by its
 * vtable, with no hook call (fut__watch_begin, once per poll). */
extern fut__aword fut__label_unwrap_vt;
extern fut__aword fut__label_name_vt;

/* ------------------------------------------------------------ the slots */

#define FUT__WATCH_COPY 4 /* words of a copied user name (31 chars) */

/* One per thread that polls tasks (a worker; the current-thread runtime's
 * thread): see watchdog.c's rules. Its own cache lines. */
struct fut__watch_slot {
    /* --- written by the polling thread --- */
    fut__aword seq;   /* 2n + 1 inside poll n, even between polls */
    fut__aword task;  /* the task polled (identity only: never read) */
    fut__aword name;  /* static name, or 0: the name is in 'copy' */
    fut__aword file;  /* spawn site (static), or 0 */
    fut__aword line;  /* its line */
    fut__aword start; /* debug builds: fut_now_ns at the poll's start */
    fut__aword tid;   /* the thread's id (fut__watch_bind) */
    fut__aword copy[FUT__WATCH_COPY]; /* a user name, NUL-terminated */
    /* --- written by the watchdog --- */
    _Alignas(64) fut__aword long_seq; /* 'seq' of a poll found long */
    fut__aword long_since;            /* when that poll started (at most) */
    /* the watchdog thread's own */
    uintptr_t seen_seq; /* the poll it watches */
    int64_t seen_at;    /* when it first saw it */
    int64_t next_ns;    /* elapsed time of its next report */
} __attribute__((aligned(64)));

/* The slot of the thread polling now, or NULL (no watchdog). */
extern _Thread_local struct fut__watch_slot *fut__tls_watch_slot;

/* Poll start (out of line: names are resolved) and end (one store).
 * 'known': t's label when the caller has it, else NULL; 't0': fut_now_ns
 * at the start in debug builds, 0 otherwise. */
void fut__watch_begin(struct fut__watch_slot *ws, struct fut_task *t,
                      const struct fut__task_label *known, int64_t t0);

static inline void fut__watch_end(struct fut__watch_slot *ws)
{
    /* Relaxed: see the rules (the next begin's release fence orders it
     * before that poll's names). Owner-written: its own load is exact. */
    fut__store(&ws->seq, fut__load(&ws->seq, FUT__RELAXED) + 1, FUT__RELAXED);
}

/* ------------------------------------------------------- the watchdog */

struct fut__watch {
    struct fut__watch_slot *slots; /* 'n', 64-byte aligned in 'mem' */
    void *mem;
    size_t bytes;
    int n;
    int multi;            /* slots are workers (else: the runtime thread) */
    int64_t threshold_ns; /* a poll longer than this is reported */
    int64_t period_ns;    /* the watchdog's wake interval */
    fut__aword started;   /* 1 once fut__watch_start took the lock */
    fut__aword stop;      /* the thread exits */
    fut__mutex lock;      /* 'state', 'thread' */
    int state;            /* 0 not started, 1 running, 2 stopped,
                             3 hosted (watchdog.c) */
    pthread_t thread;
    struct fut__parker parker; /* the thread sleeps here */
};

/* A watchdog for 'n' polling threads reporting polls longer than
 * 'threshold_ns'; 'multi': the slots are workers. 0 or FUT_ENOMEM. */
int fut__watch_new(int n, int64_t threshold_ns, int multi,
                   struct fut__watch **out);
/* Starts the thread unless it runs or was stopped; any thread, any
 * number of times (a relaxed load once it started). */
void fut__watch_start(struct fut__watch *w);
/* Hands the scans to another thread that ticks while tasks are polled
 * (the multi-thread runtime's monitor): fut__watch_start then starts no
 * thread. Call before any thread polls with a slot. */
void fut__watch_host(struct fut__watch *w);
/* One scan of every slot, by the host, at its tick (any period up to the
 * threshold's quarter keeps reports on time). */
void fut__watch_hosted_scan(struct fut__watch *w);
/* Stops and joins the thread, or stops the host's scans (no report is
 * made after it returned). */
void fut__watch_stop(struct fut__watch *w);
/* Frees it, once no thread polls with one of its slots. */
void fut__watch_free(struct fut__watch *w);

/* Makes slot 'i' this thread's; returns the slot it had, for unbind. */
struct fut__watch_slot *fut__watch_bind(struct fut__watch *w, int i);
void fut__watch_unbind(struct fut__watch_slot *prev);

/* A poll found long by the watchdog, for the task dump. */
struct fut__watch_long {
    uintptr_t task; /* identity only */
    int64_t elapsed_ns;
    int slot;
    char what[256]; /* "'name' (spawned at file:line)" */
};
/* 1 when slot 'i' is inside a poll the watchdog found long: fills 'out'.
 * Any thread, while 'w' is alive. */
int fut__watch_long_poll(struct fut__watch *w, int i,
                         struct fut__watch_long *out);

#endif /* FUT_RT_WATCHDOG_H */
