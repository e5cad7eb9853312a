/* SPDX-License-Identifier: MIT */
/* Internals shared by the scheduler (mc_sched.c) and the memory model
 * (mc_mem.c). Not for models. */
#ifndef FUT_TEST_MC_INT_H
#define FUT_TEST_MC_INT_H

#include <ucontext.h>

#include "mc.h"

#define MC_SB_MAX 8

/* A vector clock: c[t] is the last event of thread t known to happen
 * before the owner's current point. Own components start at 1, so 0 means
 * "nothing of that thread". */
struct mc_vc {
    uint32_t c[MC_MAX_THREADS];
};

enum mc_op {
    OP_START,
    OP_LOAD,
    OP_STORE,
    OP_SWAP,
    OP_CAS,
    OP_RMW,
    OP_FENCE,
    OP_READ,
    OP_WRITE,
    OP_YIELD,
    OP_ALLOC,
    OP_FREE,
    OP_SPAWN,
    OP_JOIN,
    OP_PARK,
    OP_UNPARK,
    OP_LOCK,
    OP_UNLOCK,
    OP_EXIT,
    OP_MEMBARRIER
};

/* A TSO store-buffer entry: the value and the release clock it carries
 * (taken when the store was issued, installed when it is flushed). */
struct mc_sb_entry {
    _Atomic uintptr_t *addr;
    uintptr_t val;
    struct mc_vc rel;
    const char *file;
    int line;
};

/* The operation a thread will perform when it is next scheduled. */
struct mc_pending {
    int op;
    int mo;
    const void *addr;
    intptr_t arg;
    const char *file;
    int line;
};

enum { TS_UNUSED, TS_RUNNABLE, TS_FINISHED };

struct mc_thread {
    ucontext_t ctx;
    int state;
    int yielded;        /* spinning: not runnable until someone writes */
    unsigned long seen; /* mc__g.changes when its last step ran */
    int permit;         /* park permit */
    struct mc_pending pend;
    void (*fn)(void *);
    void *arg;
    struct mc_vc clock;     /* happens-before knowledge */
    struct mc_vc rel_fence; /* clock at the last release fence */
    struct mc_vc acq_fence; /* released clocks read relaxed, for a later
                               acquire fence */
    struct mc_vc permit_clock;
    struct mc_sb_entry sb[MC_SB_MAX]; /* FIFO ring */
    int sb_head, sb_len;
    char *stack;
};

struct mc_global {
    int active; /* an execution is running */
    int mem;    /* MC_MEM_SC or MC_MEM_TSO */
    int sb_cap;
    int tracing;
    int nthreads;
    int cur;
    unsigned long changes; /* shared-state changes so far (for spinners) */
    struct mc_thread th[MC_MAX_THREADS];
};

extern struct mc_global mc__g;

/* Scheduler services (mc_sched.c). */
void mc__point(int op, int mo, const void *addr, intptr_t arg,
               const char *file, int line);
_Noreturn void mc__fail(int kind, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void mc__trace(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
const char *mc__base(const char *file);
void mc__wake_spinners(int except);

/* Memory model services (mc_mem.c). */
void mc__mem_begin(void);
int mc__mem_leaks(char *msg, size_t n); /* MC_OK or MC_FAIL_LEAK */
void mc__mem_release(void);             /* frees this execution's blocks */
void mc__sb_flush_one(struct mc_thread *t);
void mc__sb_drain(struct mc_thread *t);
int mc__sb_has(const struct mc_thread *t, const void *addr);
int mc__touches(const struct mc_thread *t, const struct mc_thread *u);
const char *mc__addr_name(const void *p, char *buf, size_t n);

/* Vector clocks. */
static inline void mc__vc_join(struct mc_vc *a, const struct mc_vc *b)
{
    for (int i = 0; i < MC_MAX_THREADS; i++)
        if (b->c[i] > a->c[i])
            a->c[i] = b->c[i];
}

static inline struct mc_thread *mc__self(void)
{
    return &mc__g.th[mc__g.cur];
}

/* Ends the thread's current event: later events of this thread are not
 * covered by clocks released so far. */
static inline void mc__tick(struct mc_thread *t)
{
    t->clock.c[t - mc__g.th]++;
}

#endif /* FUT_TEST_MC_INT_H */
