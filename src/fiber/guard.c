/* SPDX-License-Identifier: MIT */
/* Every build: a stack overflow in a fiber is named.
 *
 * A fiber that runs past the bottom of its stack writes into the guard
 * page below it and takes a SIGSEGV. With the stack pointer in the
 * guard page no signal frame fits on the fiber's stack, so the handler
 * runs on an alternate signal stack (sigaltstack, one per thread that
 * runs fibers, made before its first switch). The handler asks fiber.c
 * whether the fault address lies in the guard page of the fiber running
 * on this thread; if so it writes "fut: stack overflow in fiber 'name'
 * (spawned at file:line, N-byte stack)" on stderr, restores the default
 * action and returns: the faulting instruction runs again and the
 * process dies of SIGSEGV as it would have. Any other fault: the handler
 * that was installed before ours is put back and the fault repeats into
 * it. Only async-signal-safe calls (write, sigaction) in the handler.
 *
 * Release builds too (it costs nothing until it fires: one 64 KiB
 * NORESERVE mapping per thread that runs fibers, and a thread-local test
 * per switch in). A program that owns SIGSEGV (a GC's write barrier,
 * libsigsegv) keeps it: its handler, installed before ours, gets every
 * fault outside a fiber's guard page - after the first such fault ours
 * is gone for good - and one installed after ours replaces it.
 * Not built into ASan/TSan builds: their runtimes own SIGSEGV (and
 * report a stack overflow themselves).
 */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fiber/fiber_internal.h"

#if !defined(FUT__ASAN) && !defined(FUT__TSAN)

#define ALT_STACK (64 * 1024)

static struct sigaction old_action;
static pthread_once_t install_once = PTHREAD_ONCE_INIT;
/* Set before the handler is installed (pthread_once orders it). */
static fut__fiber_guard_hit_fn guard_hit;
static pthread_key_t alt_key;
static _Thread_local int alt_done;

static size_t put(char *b, size_t n, size_t cap, const char *s)
{
    while (*s && n < cap)
        b[n++] = *s++;
    return n;
}

static size_t put_num(char *b, size_t n, size_t cap, unsigned long v)
{
    char d[24];
    int k = 0;
    do {
        d[k++] = (char)('0' + v % 10);
        v /= 10;
    } while (v && k < (int)sizeof d);
    while (k > 0 && n < cap)
        b[n++] = d[--k];
    return n;
}

static void on_segv(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    const char *name, *file;
    int line;
    size_t usable;
    if (!guard_hit || !guard_hit(si->si_addr, &name, &file, &line, &usable)) {
        sigaction(SIGSEGV, &old_action, NULL); /* fault again into it */
        return;
    }
    char b[512];
    size_t n = 0, cap = sizeof b - 1;
    n = put(b, n, cap, "fut: stack overflow in fiber '");
    n = put(b, n, cap, name);
    n = put(b, n, cap, "' (spawned at ");
    n = put(b, n, cap, file);
    n = put(b, n, cap, ":");
    n = put_num(b, n, cap, (unsigned long)line);
    n = put(b, n, cap, ", ");
    n = put_num(b, n, cap, (unsigned long)usable);
    n = put(b, n, cap,
            "-byte stack): give it a larger "
            "fut_fiber_opts.stack_size\n");
    ssize_t w = write(2, b, n);
    (void)w;
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigaction(sig, &dfl, NULL);
}

static void alt_free(void *p)
{
    stack_t ss;
    memset(&ss, 0, sizeof ss);
    ss.ss_flags = SS_DISABLE;
    sigaltstack(&ss, NULL);
    munmap(p, ALT_STACK);
}

static void install(void)
{
    pthread_key_create(&alt_key, alt_free);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, &old_action);
}

void fut__fiber_guard_install(fut__fiber_guard_hit_fn hit)
{
    guard_hit = hit; /* the same function every time */
    pthread_once(&install_once, install);
}

/* The first fiber on this thread: its alternate stack. Out of line, so
 * that the check every switch in pays (fut__fiber_guard_thread) saves
 * no registers and sets up no frame for it. */
static __attribute__((noinline, cold)) void guard_thread_first(void)
{
    alt_done = 1;
    stack_t cur;
    if (sigaltstack(NULL, &cur) == 0 && !(cur.ss_flags & SS_DISABLE))
        return; /* the thread has one already (the user's) */
    void *p = mmap(NULL, ALT_STACK, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        return; /* no report, still a SIGSEGV */
    stack_t ss;
    memset(&ss, 0, sizeof ss);
    ss.ss_sp = p;
    ss.ss_size = ALT_STACK;
    if (sigaltstack(&ss, NULL) != 0) {
        munmap(p, ALT_STACK);
        return;
    }
    pthread_once(&install_once, install);
    pthread_setspecific(alt_key, p); /* unmapped at the thread's exit */
}

void fut__fiber_guard_thread(void)
{
    if (FUT_UNLIKELY(!alt_done))
        guard_thread_first();
}

#else
/* Keeps the translation unit non-empty (ISO C). */
typedef int fut__guard_unused;
#endif
