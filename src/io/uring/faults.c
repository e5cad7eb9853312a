/* SPDX-License-Identifier: MIT */
/* Fault injection for the io_uring backend, from the environment:
 *
 *   FUT_URING_FAULTS="RULE[,RULE...]"   RULE = WHAT@N: every Nth time
 *     recv:ERR    a recv's CQE says -ERR instead (ECONNRESET, EPIPE,
 *                 ENOBUFS, ECANCELED, EAGAIN, ... or a number)
 *     send:ERR    likewise for a send; accept:ERR for an accept
 *     recv:short  a read copies out fewer bytes than it could (a short
 *                 read); send:short submits fewer bytes (a short write)
 *     sqfull      taking an SQE finds the SQ full (early submit)
 *
 * e.g. FUT_URING_FAULTS=recv:ECONNRESET@97,send:short@5,sqfull@13. Read
 * once, when the first io_uring backend of the process is created; unset,
 * the hook stays NULL and costs one pointer test per CQE. Tests that set
 * fut__uring_faults themselves (backend.h) need no environment. The
 * counters are shared by every ring of the process (relaxed atomics: a
 * count, not an order).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "io/backend.h"
#include "io/uring/uring.h"
#include "io/io_internal.h"

/* The kinds of backend.c ('enum ukind'). */
enum { K_RECV_MS = 0, K_RECV = 1, K_SEND = 2, K_ACCEPT = 3 };

#define MAX_RULES 8

struct rule {
    int what;   /* 'r' recv, 's' send, 'a' accept, 'q' sqfull */
    long res;   /* -errno, or 0 for short */
    long every; /* >= 1 */
    fut__aword count;
};

struct fut__uring_faults *fut__uring_faults; /* backend.h; NULL: no faults */

static struct rule rules[MAX_RULES];
static int n_rules;

static int errno_of(const char *s, size_t n, long *out)
{
    static const struct {
        const char *name;
        int err;
    } names[] = {{"ECONNRESET", ECONNRESET},
                 {"EPIPE", EPIPE},
                 {"ENOBUFS", ENOBUFS},
                 {"ECANCELED", ECANCELED},
                 {"EAGAIN", EAGAIN},
                 {"EMFILE", EMFILE},
                 {"ETIMEDOUT", ETIMEDOUT},
                 {"EIO", EIO},
                 {"ECONNABORTED", ECONNABORTED}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strlen(names[i].name) == n && !memcmp(s, names[i].name, n)) {
            *out = -names[i].err;
            return 0;
        }
    char *end;
    long v = strtol(s, &end, 10);
    if (end != s + n || v <= 0)
        return -1;
    *out = -v;
    return 0;
}

/* Parses one RULE of [s, s + n). */
static int parse_rule(const char *s, size_t n, struct rule *r)
{
    const char *at = memchr(s, '@', n);
    if (!at)
        return -1;
    char *end;
    r->every = strtol(at + 1, &end, 10);
    if (end != s + n || r->every < 1)
        return -1;
    size_t wl = (size_t)(at - s);
    if (wl == 6 && !memcmp(s, "sqfull", 6)) {
        r->what = 'q';
        return 0;
    }
    const char *colon = memchr(s, ':', wl);
    if (!colon)
        return -1;
    size_t kl = (size_t)(colon - s);
    if (kl == 4 && !memcmp(s, "recv", 4))
        r->what = 'r';
    else if (kl == 4 && !memcmp(s, "send", 4))
        r->what = 's';
    else if (kl == 6 && !memcmp(s, "accept", 6))
        r->what = 'a';
    else
        return -1;
    const char *v = colon + 1;
    size_t vl = (size_t)(at - v);
    if (vl == 5 && !memcmp(v, "short", 5)) {
        r->res = 0;
        return r->what == 'a' ? -1 : 0;
    }
    return errno_of(v, vl, &r->res);
}

static int kind_what(int kind)
{
    return kind == K_SEND ? 's' : kind == K_ACCEPT ? 'a' : 'r';
}

/* 1 when rule 'r' fires now (every 'every'th call). */
static int fires(struct rule *r)
{
    uintptr_t c = fut__fetch_add(&r->count, 1, FUT__RELAXED) + 1;
    return c % (uintptr_t)r->every == 0;
}

static void env_cqe(int kind, long *res)
{
    for (int i = 0; i < n_rules; i++) {
        struct rule *r = &rules[i];
        if (r->what == kind_what(kind) && r->res != 0 && fires(r)) {
            *res = r->res;
            return;
        }
    }
}

static size_t env_shorten(int kind, size_t len)
{
    for (int i = 0; i < n_rules; i++) {
        struct rule *r = &rules[i];
        if (r->what == kind_what(kind) && r->res == 0 && fires(r))
            return len / 2 ? len / 2 : 1;
    }
    return len;
}

static int env_sq_full(void)
{
    for (int i = 0; i < n_rules; i++)
        if (rules[i].what == 'q' && fires(&rules[i]))
            return 1;
    return 0;
}

static struct fut__uring_faults env_faults = {env_cqe, env_shorten,
                                              env_sq_full};

static void parse_env(void)
{
    const char *s = getenv("FUT_URING_FAULTS");
    if (!s || !*s || fut__uring_faults)
        return;
    while (*s && n_rules < MAX_RULES) {
        const char *comma = strchr(s, ',');
        size_t n = comma ? (size_t)(comma - s) : strlen(s);
        struct rule r;
        memset(&r, 0, sizeof r);
        if (parse_rule(s, n, &r) == 0) {
            rules[n_rules] = r;
            fut__aword_init(&rules[n_rules].count, 0);
            n_rules++;
        } else {
            fut__report("uring-faults",
                        "FUT_URING_FAULTS: bad rule '%.*s' "
                        "(ignored)",
                        (int)n, s);
        }
        s += n + (comma != NULL);
    }
    if (n_rules)
        fut__uring_faults = &env_faults;
}

void fut__uring_faults_from_env(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, parse_env);
}
