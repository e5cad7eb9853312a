/* SPDX-License-Identifier: MIT */
/* The scheduler and explorer of mc.
 *
 * Model threads are ucontext coroutines. Before each operation a thread
 * records it as its pending step and calls schedule(), which lists the
 * choices (the threads whose step is enabled, then in TSO the store
 * buffers whose flush could matter), picks one and switches to that thread
 * directly; the chosen thread then performs its step and runs on to its
 * next operation. No state is saved: each execution re-runs the body from
 * the start and replays a prefix of recorded decisions, and the DFS
 * advances the deepest decision that has an untried alternative.
 *
 * Preemption bounding (CHESS): switching away from a thread that could
 * continue costs one preemption; once the bound is spent only the running
 * thread (and flushes) may be chosen. Switches forced by blocking or exit
 * are free.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mc_int.h"

#define STACK_SIZE (256 * 1024)
#define FLUSH 100 /* option code: FLUSH + tid flushes tid's oldest store */

struct mc_global mc__g;

enum { M_DFS, M_RANDOM, M_REPLAY };

/* One recorded decision: options offered, the one taken, the allowed
 * ones (a bitmask; the preemption bound may forbid some). */
struct dec {
    uint8_t n, pick;
    uint32_t allowed;
};

static struct {
    int mode;
    int bound; /* < 0: unbounded */
    int all_points;
    int all_flushes;
    long max_steps;
    uint64_t rng;
    struct dec *dec;
    int ndec, cap_dec, depth, prefix;
    int *replay;
    int nreplay;
    int preemptions;
    long steps;
    long execs;
    int skipped;
    int fail;
    char msg[4096];
    ucontext_t main_ctx;
    void (*body)(void);
    char replay_str[16384];
    char *stacks[MC_MAX_THREADS];
} s;

/* ------------------------------------------------------------ reporting */

const char *mc__base(const char *file)
{
    if (!file)
        return "?";
    const char *b = strrchr(file, '/');
    return b ? b + 1 : file;
}

void mc__trace(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("    ", stdout);
    vprintf(fmt, ap);
    putchar('\n');
    va_end(ap);
}

const char *mc_fail_name(int kind)
{
    static const char *const names[] = {"ok",
                                        "assertion failed",
                                        "deadlock",
                                        "livelock",
                                        "data race",
                                        "leak",
                                        "use after free",
                                        "double free",
                                        "bad free",
                                        "too many steps",
                                        "nondeterministic model",
                                        "usage error"};
    return kind >= 0 && kind < MC_FAIL__COUNT ? names[kind] : "?";
}

static void set_fail(int kind, const char *fmt, va_list ap)
{
    if (s.fail)
        return;
    s.fail = kind;
    vsnprintf(s.msg, sizeof s.msg, fmt, ap);
}

/* Ends the execution with a failure (the first one counts). */
_Noreturn void mc__fail(int kind, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    set_fail(kind, fmt, ap);
    va_end(ap);
    if (!mc__g.active) {
        fprintf(stderr, "mc: %s outside an execution: %s\n",
                mc_fail_name(kind), s.msg);
        abort();
    }
    setcontext(&s.main_ctx);
    abort();
}

void mc__assert(int ok, const char *expr, const char *msg, const char *file,
                int line)
{
    if (!ok)
        mc__fail(MC_FAIL_ASSERT, "assertion failed: %s (%s) in T%d at %s:%d",
                 msg, expr, mc__g.cur, mc__base(file), line);
}

/* ---------------------------------------------------------- scheduling */

static int enabled(const struct mc_thread *t)
{
    if (t->state != TS_RUNNABLE || t->yielded)
        return 0;
    switch (t->pend.op) {
    case OP_PARK:
        return t->permit;
    case OP_JOIN:
        return mc__g.th[t->pend.arg].state == TS_FINISHED;
    case OP_LOCK:
        return ((const struct mc_mutex *)t->pend.addr)->owner == 0;
    default:
        return 1;
    }
}

void mc__wake_spinners(int except)
{
    mc__g.changes++;
    for (int i = 0; i < mc__g.nthreads; i++)
        if (i != except)
            mc__g.th[i].yielded = 0;
}

/* Is a flush of u's oldest store worth exploring now (mc__touches)? */
static int flush_matters(const struct mc_thread *u)
{
    for (int i = 0; i < mc__g.nthreads; i++) {
        const struct mc_thread *t = &mc__g.th[i];
        if (t != u && t->state == TS_RUNNABLE && mc__touches(t, u))
            return 1;
    }
    return 0;
}

static uint64_t rng_next(void)
{
    uint64_t z = (s.rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static struct dec *dec_slot(void)
{
    if (s.depth == s.cap_dec) {
        s.cap_dec = s.cap_dec ? 2 * s.cap_dec : 1024;
        s.dec = realloc(s.dec, (size_t)s.cap_dec * sizeof *s.dec);
        if (!s.dec)
            abort();
    }
    return &s.dec[s.depth];
}

static int pick_allowed(uint32_t allowed, int k) /* k-th set bit */
{
    for (int i = 0; i < 32; i++)
        if ((allowed >> i & 1) && k-- == 0)
            return i;
    return 0;
}

static int popcount(uint32_t x)
{
    int n = 0;
    for (; x; x &= x - 1)
        n++;
    return n;
}

/* Takes decision number s.depth among n options. */
static int choose(int n, uint32_t allowed)
{
    if (n == 1)
        return 0;
    struct dec *d = dec_slot();
    int pick;
    if (s.mode == M_REPLAY) {
        pick = s.depth < s.nreplay ? s.replay[s.depth] : 0;
        if (pick >= n)
            mc__fail(MC_FAIL_NONDET,
                     "replay: decision %d has %d options, "
                     "not %d",
                     s.depth, n, pick + 1);
    } else if (s.mode == M_RANDOM) {
        pick = pick_allowed(allowed,
                            (int)(rng_next() % (uint64_t)popcount(allowed)));
    } else if (s.depth < s.prefix) {
        if (d->n != n || d->allowed != allowed)
            mc__fail(MC_FAIL_NONDET,
                     "decision %d offered %d options, %d in "
                     "an earlier run: the model depends on something the "
                     "checker does not control",
                     s.depth, n, d->n);
        pick = d->pick;
    } else {
        pick = pick_allowed(allowed, 0);
    }
    d->n = (uint8_t)n;
    d->pick = (uint8_t)pick;
    d->allowed = allowed;
    s.depth++;
    return pick;
}

static const char *op_name(int op)
{
    static const char *const names[] = {
        "start", "load",   "store", "swap",   "cas",  "rmw",       "fence",
        "read",  "write",  "yield", "alloc",  "free", "spawn",     "join",
        "park",  "unpark", "lock",  "unlock", "exit", "membarrier"};
    return names[op];
}

/* No choice left: the execution is over, or stuck. */
static _Noreturn void end_of_options(void)
{
    char buf[2048];
    size_t used = 0;
    int blocked = 0, spinning = 0;
    for (int i = 0; i < mc__g.nthreads; i++) {
        const struct mc_thread *t = &mc__g.th[i];
        if (t->state != TS_RUNNABLE)
            continue;
        if (t->yielded)
            spinning++;
        else
            blocked++;
        if (used < sizeof buf)
            used += (size_t)snprintf(
                buf + used, sizeof buf - used, " T%d:%s%s%s at %s:%d", i,
                t->yielded ? "spinning before " : "", op_name(t->pend.op),
                t->pend.op == OP_PARK ? " (nobody will unpark it)" : "",
                mc__base(t->pend.file), t->pend.line);
    }
    if (blocked)
        mc__fail(MC_FAIL_DEADLOCK,
                 "deadlock (or lost wakeup): every live "
                 "thread is blocked:%s",
                 buf);
    if (spinning)
        mc__fail(MC_FAIL_LIVELOCK,
                 "livelock: every live thread spins and "
                 "nobody can change what they wait for:%s",
                 buf);
    setcontext(&s.main_ctx);
    abort();
}

/* Picks the next step; returns when 'self' is to perform its pending one
 * (never, if self has exited). The one long function of the scheduler. */
static void schedule(struct mc_thread *self)
{
    for (;;) {
        int opt[2 * MC_MAX_THREADS], n = 0;
        int me = (int)(self - mc__g.th);
        int self_on = enabled(self);
        if (self_on)
            opt[n++] = me;
        for (int i = 0; i < mc__g.nthreads; i++)
            if (i != me && enabled(&mc__g.th[i]))
                opt[n++] = i;
        int nthreads_on = n;
        /* Flushes: only those that could change what some step reads or
         * writes, or any when no thread can move. */
        for (int i = 0; i < mc__g.nthreads; i++) {
            struct mc_thread *u = &mc__g.th[i];
            if (u->sb_len &&
                (!nthreads_on || s.all_flushes || flush_matters(u)))
                opt[n++] = FLUSH + i;
        }
        if (!n)
            end_of_options();
        uint32_t allowed = (n >= 32 ? ~0u : (1u << n) - 1);
        if (s.mode != M_REPLAY && s.bound >= 0 && self_on &&
            s.preemptions >= s.bound)
            allowed &= ~(((1u << nthreads_on) - 1) & ~1u);
        int o = opt[choose(n, allowed)];
        if (o >= FLUSH) {
            mc__sb_flush_one(&mc__g.th[o - FLUSH]);
            continue;
        }
        if (o == me)
            return;
        if (self_on)
            s.preemptions++;
        mc__g.cur = o;
        swapcontext(&self->ctx, &mc__g.th[o].ctx);
        return; /* someone chose us again */
    }
}

/* Operations that no other thread can observe: plain accesses are checked
 * by happens-before, which does not depend on where they sit between
 * visible steps (a free checks that every access happens before it), and
 * an allocation is private until published. Switching just before them
 * adds no behaviour, so by default they are not preemption points. */
static int invisible(int op)
{
    return op == OP_READ || op == OP_WRITE || op == OP_ALLOC;
}

void mc__point(int op, int mo, const void *addr, intptr_t arg,
               const char *file, int line)
{
    struct mc_thread *t = mc__self();
    t->pend = (struct mc_pending){op, mo, addr, arg, file, line};
    if (++s.steps > s.max_steps)
        mc__fail(MC_FAIL_STEPS,
                 "execution exceeded %ld steps (a spin loop "
                 "without mc_yield?)",
                 s.max_steps);
    if (s.all_points || !invisible(op))
        schedule(t);
    if (op != OP_YIELD)
        t->seen = mc__g.changes;
}

/* -------------------------------------------------------------- threads */

static void thread_entry(void)
{
    struct mc_thread *t = mc__self();
    t->fn(t->arg);
    mc__point(OP_EXIT, 0, 0, 0, "(thread exit)", 0);
    if (mc__g.mem == MC_MEM_TSO)
        mc__sb_drain(t);
    t->state = TS_FINISHED;
    mc__wake_spinners(-1);
    if (mc__g.tracing)
        mc__trace("T%d exit", mc__g.cur);
    schedule(t);
    abort(); /* a finished thread is never chosen */
}

static void thread_setup(int id, void (*fn)(void *), void *arg)
{
    struct mc_thread *t = &mc__g.th[id];
    if (!s.stacks[id] && !(s.stacks[id] = malloc(STACK_SIZE)))
        abort();
    memset(t, 0, sizeof *t);
    t->state = TS_RUNNABLE;
    t->fn = fn;
    t->arg = arg;
    t->pend.op = OP_START;
    t->clock.c[id] = 1;
    getcontext(&t->ctx);
    t->ctx.uc_stack.ss_sp = s.stacks[id];
    t->ctx.uc_stack.ss_size = STACK_SIZE;
    t->ctx.uc_link = 0;
    makecontext(&t->ctx, thread_entry, 0);
}

int mc_self(void)
{
    return mc__g.cur;
}

static void thread_trace(const char *op, int arg, const char *file, int line)
{
    if (!mc__g.tracing)
        return;
    if (arg >= 0)
        mc__trace("T%d %-9s T%d  %s:%d", mc__g.cur, op, arg, mc__base(file),
                  line);
    else
        mc__trace("T%d %-9s  %s:%d", mc__g.cur, op, mc__base(file), line);
}

/* A synchronising thread operation drains the store buffer: on x86 each
 * is a syscall or a locked instruction. */
static void sync_op(struct mc_thread *t)
{
    if (mc__g.mem == MC_MEM_TSO)
        mc__sb_drain(t);
}

int mc__spawn(void (*fn)(void *), void *arg, const char *file, int line)
{
    mc__point(OP_SPAWN, 0, 0, 0, file, line);
    if (mc__g.nthreads == MC_MAX_THREADS)
        mc__fail(MC_FAIL_USAGE, "more than %d threads", MC_MAX_THREADS);
    struct mc_thread *p = mc__self();
    sync_op(p);
    int id = mc__g.nthreads;
    thread_setup(id, fn, arg);
    mc__g.nthreads++;
    struct mc_thread *c = &mc__g.th[id];
    c->clock = p->clock;
    c->clock.c[id] = 1;
    c->pend.file = file;
    c->pend.line = line;
    thread_trace("spawn", id, file, line);
    mc__tick(p);
    mc__wake_spinners(-1);
    return id;
}

void mc__join(int tid, const char *file, int line)
{
    if (tid <= 0 || tid >= mc__g.nthreads || tid == mc__g.cur)
        mc__fail(MC_FAIL_USAGE, "join of bad thread %d at %s:%d", tid,
                 mc__base(file), line);
    mc__point(OP_JOIN, 0, 0, tid, file, line);
    struct mc_thread *t = mc__self();
    sync_op(t);
    mc__vc_join(&t->clock, &mc__g.th[tid].clock);
    thread_trace("join", tid, file, line);
    mc__tick(t);
}

void mc__park(const char *file, int line)
{
    mc__point(OP_PARK, 0, 0, 0, file, line);
    struct mc_thread *t = mc__self();
    sync_op(t);
    t->permit = 0;
    mc__vc_join(&t->clock, &t->permit_clock);
    thread_trace("park", -1, file, line);
    mc__tick(t);
}

void mc__unpark(int tid, const char *file, int line)
{
    if (tid < 0 || tid >= mc__g.nthreads)
        mc__fail(MC_FAIL_USAGE, "unpark of bad thread %d at %s:%d", tid,
                 mc__base(file), line);
    mc__point(OP_UNPARK, 0, 0, tid, file, line);
    struct mc_thread *t = mc__self();
    sync_op(t);
    struct mc_thread *u = &mc__g.th[tid];
    u->permit = 1;
    mc__vc_join(&u->permit_clock, &t->clock);
    thread_trace("unpark", tid, file, line);
    mc__tick(t);
}

void mc_mutex_init(struct mc_mutex *m)
{
    memset(m, 0, sizeof *m);
}

void mc__mutex_lock(struct mc_mutex *m, const char *file, int line)
{
    mc__point(OP_LOCK, 0, m, 0, file, line);
    struct mc_thread *t = mc__self();
    sync_op(t);
    m->owner = mc__g.cur + 1;
    for (int i = 0; i < MC_MAX_THREADS; i++)
        if (m->clock[i] > t->clock.c[i])
            t->clock.c[i] = m->clock[i];
    thread_trace("lock", -1, file, line);
    mc__tick(t);
}

void mc__mutex_unlock(struct mc_mutex *m, const char *file, int line)
{
    if (m->owner != mc__g.cur + 1)
        mc__fail(MC_FAIL_USAGE,
                 "unlock of a mutex T%d does not hold at "
                 "%s:%d",
                 mc__g.cur, mc__base(file), line);
    mc__point(OP_UNLOCK, 0, m, 0, file, line);
    struct mc_thread *t = mc__self();
    sync_op(t);
    memcpy(m->clock, t->clock.c, sizeof m->clock);
    m->owner = 0;
    thread_trace("unlock", -1, file, line);
    mc__tick(t);
}

void mc_yield(const char *file, int line)
{
    if (!mc__g.active)
        return;
    mc__point(OP_YIELD, 0, 0, 0, file, line);
    /* Spin only if nothing changed since the thread last looked: a write
     * that landed between its load and this yield ends the wait. */
    struct mc_thread *t = mc__self();
    t->yielded = t->seen == mc__g.changes;
    thread_trace("yield", -1, file, line);
}

/* ------------------------------------------------------------ executions */

static void run_body(void *arg)
{
    (void)arg;
    s.body();
}

/* Runs the body once under the current decision prefix; returns MC_OK or
 * the failure kind. */
static int run_one(void)
{
    s.depth = 0;
    s.preemptions = 0;
    s.steps = 0;
    s.fail = 0;
    mc__g.nthreads = 1;
    mc__g.cur = 0;
    thread_setup(0, run_body, 0);
    mc__mem_begin();
    mc__g.active = 1;
    swapcontext(&s.main_ctx, &mc__g.th[0].ctx);
    mc__g.active = 0;
    s.ndec = s.depth;
    if (!s.fail)
        s.fail = mc__mem_leaks(s.msg, sizeof s.msg);
    mc__mem_release();
    s.execs++;
    return s.fail;
}

/* Moves the DFS to the next schedule; 0 when the tree is exhausted. */
static int backtrack(void)
{
    for (int d = s.ndec - 1; d >= 0; d--) {
        uint32_t later = s.dec[d].allowed & ~((2u << s.dec[d].pick) - 1);
        if (later) {
            s.dec[d].pick = (uint8_t)pick_allowed(later, 0);
            s.prefix = d + 1;
            return 1;
        }
    }
    return 0;
}

static void make_replay_string(void)
{
    size_t used = 0;
    char *b = s.replay_str;
    size_t n = sizeof s.replay_str;
    b[0] = 0;
    for (int i = 0; i < s.ndec && used + 16 < n;) {
        int j = i;
        while (j < s.ndec && s.dec[j].pick == s.dec[i].pick)
            j++;
        used += (size_t)snprintf(b + used, n - used, "%s%d", i ? "," : "",
                                 s.dec[i].pick);
        if (j - i > 1)
            used += (size_t)snprintf(b + used, n - used, "*%d", j - i);
        i = j;
    }
}

static int parse_replay(const char *str)
{
    free(s.replay);
    s.nreplay = 0;
    size_t cap = 64;
    s.replay = malloc(cap * sizeof *s.replay);
    if (!strcmp(str, "-"))
        return 0; /* no decisions */
    for (const char *p = str; p && *p;) {
        char *end;
        long v = strtol(p, &end, 10), k = 1;
        if (end == p || v < 0 || v > 255)
            return -1;
        if (*end == '*') {
            p = end + 1;
            k = strtol(p, &end, 10);
            if (end == p || k < 1)
                return -1;
        }
        while (k-- > 0) {
            if ((size_t)s.nreplay == cap)
                s.replay = realloc(s.replay, (cap *= 2) * sizeof *s.replay);
            s.replay[s.nreplay++] = (int)v;
        }
        p = *end == ',' ? end + 1 : end;
        if (*end && *end != ',')
            return -1;
    }
    return 0;
}

/* ------------------------------------------------------------ the driver */

static const char *env(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : 0;
}

struct mc_opts mc_defaults(int mem)
{
    struct mc_opts o;
    memset(&o, 0, sizeof o);
    o.mem = mem;
    o.preempt = -1;
    return o;
}

static int parse_mem(const char *v)
{
    if (!strcmp(v, "sc"))
        return MC_MEM_SC;
    if (!strcmp(v, "tso"))
        return MC_MEM_TSO;
    fprintf(stderr, "mc: MC_MEM must be sc or tso, not '%s'\n", v);
    exit(2);
}

/* MC_FILTER: comma-separated names; "prefix*" matches a prefix. */
static int name_selected(const char *name)
{
    const char *f = env("MC_FILTER");
    if (!f)
        return 1;
    while (*f) {
        size_t len = strcspn(f, ",");
        if (len && f[len - 1] == '*'
                ? !strncmp(name, f, len - 1)
                : strlen(name) == len && !strncmp(name, f, len))
            return 1;
        f += len + (f[len] == ',');
    }
    return 0;
}

/* Applies the environment to 'o'; returns 0 when the check is skipped. */
static int resolve(struct mc_opts *o, const char *name)
{
    const char *v;
    int em = (v = env("MC_MEM")) ? parse_mem(v) : 0;
    if (o->mem == MC_MEM_DEFAULT)
        o->mem = em ? em : MC_MEM_SC;
    else if (em && em != o->mem)
        return 0;
    if (!name_selected(name))
        return 0;
    if ((v = env("MC_SB")))
        o->sb = atoi(v);
    if (o->sb <= 0)
        o->sb = 2;
    if (o->sb > MC_SB_MAX)
        o->sb = MC_SB_MAX;
    if ((v = env("MC_PREEMPT")))
        o->preempt = strcmp(v, "inf") ? atoi(v) : -1;
    if ((v = env("MC_RANDOM")))
        o->random = atol(v);
    if ((v = env("MC_SEED")))
        o->seed = strtoull(v, 0, 0);
    if (!o->seed)
        o->seed = 1;
    if ((v = env("MC_MAX_EXECS")))
        o->max_execs = atol(v);
    if ((v = env("MC_MAX_STEPS")))
        o->max_steps = atoi(v);
    if (o->max_steps <= 0)
        o->max_steps = 20000;
    if ((v = env("MC_ALL_POINTS")))
        o->all_points = atoi(v);
    if ((v = env("MC_ALL_FLUSHES")))
        o->all_flushes = atoi(v);
    if ((v = env("MC_REPLAY")))
        o->replay = v;
    return 1;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void mode_name(const struct mc_opts *o, char *buf, size_t n)
{
    if (o->mem == MC_MEM_TSO)
        snprintf(buf, n, "tso/sb%d", o->sb);
    else
        snprintf(buf, n, "sc");
}

/* Re-runs the failing schedule with tracing on. */
static void print_trace(const char *name, const struct mc_opts *o, int kind)
{
    int rerun = !o->quiet && !o->replay;
    char msg[sizeof s.msg];
    char mode[32];
    memcpy(msg, s.msg, sizeof msg);
    make_replay_string();
    mode_name(o, mode, sizeof mode);
    if (rerun) {
        printf("  trace of the failing schedule:\n");
        parse_replay(s.replay_str);
        s.mode = M_REPLAY;
        mc__g.tracing = 1;
        int again = run_one();
        mc__g.tracing = 0;
        s.execs--;
        if (again != kind)
            printf("  (the replay ended with '%s', not '%s': the model is "
                   "not deterministic)\n",
                   mc_fail_name(again), mc_fail_name(kind));
    }
    printf("  %s\n", msg);
    printf("  replay: MC_FILTER=%s MC_MEM=%s MC_SB=%d MC_REPLAY=%s\n", name,
           o->mem == MC_MEM_TSO ? "tso" : "sc", o->sb,
           s.replay_str[0] ? s.replay_str : "-");
}

static int explore(const struct mc_opts *o)
{
    int r = MC_OK;
    if (o->replay) {
        if (parse_replay(o->replay)) {
            fprintf(stderr, "mc: bad MC_REPLAY string\n");
            exit(2);
        }
        s.mode = M_REPLAY;
        mc__g.tracing = !o->quiet;
        r = run_one();
        mc__g.tracing = 0;
        return r;
    }
    if (o->random > 0) {
        s.mode = M_RANDOM;
        s.rng = o->seed;
        for (long i = 0; i < o->random && r == MC_OK; i++)
            r = run_one();
        return r;
    }
    s.mode = M_DFS;
    s.prefix = 0;
    do {
        r = run_one();
        s.mode = M_DFS;
    } while (r == MC_OK && backtrack() &&
             !(o->max_execs && s.execs >= o->max_execs));
    return r;
}

int mc_check(const char *name, void (*body)(void), const struct mc_opts *o)
{
    struct mc_opts opt = o ? *o : mc_defaults(MC_MEM_DEFAULT);
    s.execs = 0;
    s.replay_str[0] = 0;
    s.skipped = !resolve(&opt, name);
    if (s.skipped)
        return MC_OK;
    mc__g.mem = opt.mem;
    mc__g.sb_cap = opt.sb;
    s.bound = opt.preempt;
    s.all_points = opt.all_points;
    s.all_flushes = opt.all_flushes;
    s.max_steps = opt.max_steps;
    s.body = body;
    double t0 = now_s();
    int r = explore(&opt);
    double dt = now_s() - t0;
    int exhausted = r == MC_OK && !opt.replay && opt.random <= 0 &&
                    !(opt.max_execs && s.execs >= opt.max_execs);
    char mode[32], how[64];
    mode_name(&opt, mode, sizeof mode);
    if (opt.replay)
        snprintf(how, sizeof how, "replay");
    else if (opt.random > 0)
        snprintf(how, sizeof how, "random, seed %llu",
                 (unsigned long long)opt.seed);
    else
        snprintf(how, sizeof how, "%s%s",
                 r           ? "stopped at the failure"
                 : exhausted ? "exhaustive"
                             : "stopped at MC_MAX_EXECS",
                 opt.preempt >= 0 ? ", preemption bound" : "");
    if (!opt.replay && opt.random <= 0 && opt.preempt >= 0)
        snprintf(how + strlen(how), sizeof how - strlen(how), " %d",
                 opt.preempt);
    printf("mc: %-26s %-7s %s  %ld executions (%s)  %.2fs\n", name, mode,
           r ? "FAIL" : "PASS", s.execs, how, dt);
    if (r)
        print_trace(name, &opt, r);
    fflush(stdout);
    return r;
}

long mc_executions(void)
{
    return s.execs;
}

int mc_skipped(void)
{
    return s.skipped;
}

const char *mc_replay_string(void)
{
    return s.replay_str;
}
