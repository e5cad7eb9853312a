/* SPDX-License-Identifier: MIT */
/* mc: a small stateless model checker for C11 concurrent code ("loom for
 * C"). Model threads are ucontext coroutines driven by one scheduler; the
 * test body is re-executed once per schedule, and every operation below is
 * a scheduling point. See README.md for the design and the environment
 * variables.
 *
 * Library code reaches the atomics through src/util/atomic.h, which
 * includes this header when built with -DFUT_MODEL_CHECK. Models use the
 * thread, park, mutex and assertion calls directly.
 */
#ifndef FUT_TEST_MC_H
#define FUT_TEST_MC_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define MC_MAX_THREADS 8

/* ----------------------------------------------------- memory operations */

enum { MC_ADD, MC_SUB, MC_OR, MC_AND, MC_XOR };

/* Non-atomic initialisation of an atomic word (no scheduling point). */
void mc_init(_Atomic uintptr_t *p, uintptr_t v);
uintptr_t mc_load(_Atomic uintptr_t *p, int mo, const char *file, int line);
void mc_store(_Atomic uintptr_t *p, uintptr_t v, int mo, const char *file,
              int line);
uintptr_t mc_swap(_Atomic uintptr_t *p, uintptr_t v, int mo, const char *file,
                  int line);
/* Strong CAS; '*expected' is updated with the value seen on failure. */
_Bool mc_cas(_Atomic uintptr_t *p, uintptr_t *expected, uintptr_t desired,
             int mo_succ, int mo_fail, const char *file, int line);
/* op is MC_ADD, MC_SUB, MC_OR, MC_AND or MC_XOR; returns the previous
 * value. */
uintptr_t mc_rmw(_Atomic uintptr_t *p, int op, uintptr_t v, int mo,
                 const char *file, int line);
void mc_fence(int mo, const char *file, int line);
/* Asymmetric fence (Linux membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)):
 * a seq_cst fence for the caller and, at this instant, a full barrier in
 * every other thread - in TSO, every thread's buffered stores reach
 * memory now. It adds no happens-before edge (as on hardware, what it
 * orders is read through atomics). */
void mc_membarrier(const char *file, int line);

/* Annotations of plain (non-atomic) accesses to shared data: race-checked
 * against happens-before, and checked against freed blocks. */
void mc_plain_read(const void *p, size_t n, const char *file, int line);
void mc_plain_write(const void *p, size_t n, const char *file, int line);

/* Spin-loop hint: the thread is not scheduled again until another thread
 * changes shared state (a spin with nobody to end it is a livelock). */
void mc_yield(const char *file, int line);

/* Tracked allocation: leaks, use after free and double free are failures.
 * Blocks are really released only when the execution ends, so an address
 * is never reused within one execution. */
void *mc_alloc(size_t n, const char *file, int line);
void mc_free(void *p, const char *file, int line);

/* 1 when 'p' points into a tracked block that is live (not freed). For
 * oracle objects of a model (no scheduling point). */
int mc_block_live(const void *p);

/* Names a region for traces ("cell+8" instead of an address); valid for
 * the current execution (call it from the body each time). */
void mc_label(const void *p, size_t n, const char *name);

/* --------------------------------------------------- threads and blocking */

/* Spawns a model thread running fn(arg); returns its id (0 is the body). */
#define mc_spawn(fn, arg) mc__spawn((fn), (arg), __FILE__, __LINE__)
/* Blocks until thread 'tid' has finished (acquires its final clock). */
#define mc_join(tid) mc__join((tid), __FILE__, __LINE__)
/* Blocks until a permit is available, then consumes it (futex-like: an
 * unpark that came first is remembered). */
#define mc_park() mc__park(__FILE__, __LINE__)
#define mc_unpark(tid) mc__unpark((tid), __FILE__, __LINE__)
/* Id of the calling model thread. */
int mc_self(void);

struct mc_mutex {
    int owner;                      /* tid + 1, 0 when free */
    uint32_t clock[MC_MAX_THREADS]; /* released by the last unlock */
};
void mc_mutex_init(struct mc_mutex *m);
#define mc_mutex_lock(m) mc__mutex_lock((m), __FILE__, __LINE__)
#define mc_mutex_unlock(m) mc__mutex_unlock((m), __FILE__, __LINE__)

/* Fails the current execution with 'msg' when 'cond' is false. */
#define mc_assert(cond, msg)                                                 \
    mc__assert(!!(cond), #cond, (msg), __FILE__, __LINE__)

int mc__spawn(void (*fn)(void *), void *arg, const char *file, int line);
void mc__join(int tid, const char *file, int line);
void mc__park(const char *file, int line);
void mc__unpark(int tid, const char *file, int line);
void mc__mutex_lock(struct mc_mutex *m, const char *file, int line);
void mc__mutex_unlock(struct mc_mutex *m, const char *file, int line);
void mc__assert(int ok, const char *expr, const char *msg, const char *file,
                int line);

/* ---------------------------------------------------------------- driver */

enum mc_mem { MC_MEM_DEFAULT = 0, MC_MEM_SC, MC_MEM_TSO };

/* Failure kinds; mc_check returns one of them (MC_OK = 0 on success). */
enum mc_fail {
    MC_OK = 0,
    MC_FAIL_ASSERT,
    MC_FAIL_DEADLOCK,
    MC_FAIL_LIVELOCK,
    MC_FAIL_RACE,
    MC_FAIL_LEAK,
    MC_FAIL_UAF,
    MC_FAIL_DOUBLE_FREE,
    MC_FAIL_BAD_FREE,
    MC_FAIL_STEPS,
    MC_FAIL_NONDET,
    MC_FAIL_USAGE,
    MC_FAIL__COUNT
};

struct mc_opts {
    int mem;            /* MC_MEM_*; DEFAULT: $MC_MEM or sc */
    int sb;             /* TSO store-buffer capacity; 0: $MC_SB or 2 */
    int preempt;        /* preemption bound; < 0: unbounded */
    long random;        /* > 0: that many random schedules instead of DFS */
    uint64_t seed;      /* random mode seed; 0: $MC_SEED or 1 */
    long max_execs;     /* stop the DFS after this many (0: no limit) */
    int max_steps;      /* operations per execution (0: 20000) */
    int all_points;     /* also preempt at plain accesses and allocation */
    int all_flushes;    /* offer every TSO flush everywhere (no reduction) */
    const char *replay; /* replay one schedule (else $MC_REPLAY) */
    int quiet;          /* no failure trace (expected failures, litmus) */
};

/* Defaults: unbounded, memory mode 'mem'. Environment variables override
 * (MC_PREEMPT, MC_RANDOM, MC_SEED, MC_SB, MC_MAX_EXECS, MC_REPLAY); MC_MEM
 * selects which modes run (a check in another mode is skipped), MC_FILTER
 * which models (substring of the name). */
struct mc_opts mc_defaults(int mem);

/* Runs 'body' as thread 0 under every schedule (DFS, bounded by the
 * preemption bound) or under random schedules; prints a one-line summary
 * and, on failure, the failing trace and its replay string. Returns MC_OK
 * or the kind of the first failure found. */
int mc_check(const char *name, void (*body)(void), const struct mc_opts *o);

/* Executions explored by the last mc_check; 1 when it was skipped. */
long mc_executions(void);
/* 1 when the last mc_check was skipped by MC_MEM or MC_FILTER. */
int mc_skipped(void);
/* The replay string of the last failure ("" if none). */
const char *mc_replay_string(void);
const char *mc_fail_name(int kind);

/* ------------------------------------------------------ model programs */

/* One model: a body for mc_check and its default preemption bound (-1:
 * unbounded). */
struct mc_model {
    const char *name;
    void (*body)(void);
    int preempt;
};

/* The main of a model program (mc_main.c): [--expect KIND] [--mem sc|tso]
 * [MODEL...]; no model named = all, no --mem = both modes. Returns the
 * exit status: without --expect, 1 if any run failed; with it, 0 only if
 * some run failed with KIND (a run failing otherwise aborts). */
int mc_model_main(const char *prog, const struct mc_model *models, size_t n,
                  int argc, char **argv);

#endif /* FUT_TEST_MC_H */
