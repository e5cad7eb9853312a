/* SPDX-License-Identifier: MIT */
/* fetch: fetches URLs concurrently with libcurl on fut (the adapter
 * libfut_curl, include/fut/curl.h), from fibers, and prints one line per
 * URL, in the order given: the HTTP status and the body's size, or
 * curl's error.
 *
 *   ./build/examples/fetch [--parallel N] [--timeout S] [--cacert F]
 *                          [--workers N] URL...
 *
 * --parallel N: at most N transfers at a time (default 16), one fiber
 * each, all on one multi handle; --timeout S: curl's CURLOPT_TIMEOUT_MS
 * per transfer (default 30 s); --cacert F: trust the certificates in
 * file F (CURLOPT_CAINFO), e.g. a test server's self-signed one;
 * --workers N: a multi-thread runtime of N workers (default: the
 * current-thread runtime). Exit status 0 when every transfer got a
 * response, 1 otherwise, 2 for a bad command line. Built when the
 * adapter is (FUT_CURL). */
#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "cmdline.h"
#include "fut.h"
#include "fut/curl.h"

static const char usage[] =
    "usage: fetch [--parallel N] [--timeout S] [--cacert F] [--workers N]\n"
    "             URL...\n"
    "  fetches the URLs concurrently (at most N at a time, default 16;\n"
    "  each within S seconds, default 30) and prints, per URL in order,\n"
    "  'STATUS SIZE URL' or 'error: WHAT URL'; --cacert F: trust the\n"
    "  certificates in file F; --workers N: a multi-thread runtime\n";

struct result {
    CURLcode code; /* curl's verdict */
    int r;         /* the adapter's result (0, or a FUT_E* code) */
    long status;   /* the HTTP status */
    size_t size;   /* bytes of body */
};

struct job {
    struct fut_curl_multi *m;
    char **urls;
    int n;
    long timeout_ms;
    const char *cacert; /* --cacert, or NULL */
    pthread_mutex_t mu; /* guards 'next' (fibers may run on workers) */
    int next;           /* the next URL to fetch */
    struct result *res; /* one per URL */
};

/* The write callback: count the bytes, keep nothing. */
static size_t on_body(char *p, size_t size, size_t n, void *ud)
{
    (void)p;
    *(size_t *)ud += size * n;
    return size * n;
}

/* A fiber: fetches URLs until none is left. */
static intptr_t fetcher(void *arg)
{
    struct job *jb = arg;
    CURL *e = curl_easy_init();
    if (!e)
        return FUT_ENOMEM;
    for (;;) {
        pthread_mutex_lock(&jb->mu);
        int i = jb->next++;
        pthread_mutex_unlock(&jb->mu);
        if (i >= jb->n)
            break;
        struct result *r = &jb->res[i];
        curl_easy_reset(e);
        curl_easy_setopt(e, CURLOPT_URL, jb->urls[i]);
        curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(e, CURLOPT_WRITEDATA, &r->size);
        curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 1L);
        curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, jb->timeout_ms);
        curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
        if (jb->cacert)
            curl_easy_setopt(e, CURLOPT_CAINFO, jb->cacert);
        r->r = fut_curl_perform(jb->m, e, &r->code);
        curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &r->status);
        if (r->r == FUT_ECANCELED)
            break;
    }
    curl_easy_cleanup(e);
    return 0;
}

/* The main fiber: the multi, the fetchers, the report. */
static intptr_t fetch_all(void *arg)
{
    struct job *jb = arg;
    int r = fut_curl_multi_new(&jb->m);
    if (r < 0) {
        fprintf(stderr, "fetch: %s\n", fut_strerror(r));
        return 1;
    }
    int nfib = jb->next < jb->n ? jb->next : jb->n;
    jb->next = 0;
    struct fut_join *j = calloc((size_t)nfib, sizeof *j);
    int started = 0;
    for (int i = 0; j && i < nfib; i++)
        if (fut_fiber_spawn(NULL, fetcher, jb, NULL, &j[started]) == 0)
            started++;
    for (int i = 0; i < started; i++)
        fut_await(&j[i]);
    free(j);
    fut_curl_multi_free(jb->m);
    int bad = started == 0;
    for (int i = 0; i < jb->n; i++) {
        struct result *x = &jb->res[i];
        if (x->r == 0 && x->code == CURLE_OK) {
            printf("%ld %zu %s\n", x->status, x->size, jb->urls[i]);
        } else {
            printf("error: %s %s\n",
                   x->r ? fut_strerror(x->r) : curl_easy_strerror(x->code),
                   jb->urls[i]);
            bad = 1;
        }
    }
    return bad;
}

int main(int argc, char **argv)
{
    long parallel = 16, workers = 0;
    int64_t timeout_ns = 30 * 1000000000LL;
    struct job jb = {0};
    jb.urls = calloc((size_t)argc, sizeof *jb.urls);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        if (ex_is_help(a))
            return ex_usage(1, usage);
        if (!strcmp(a, "--parallel")) {
            if (!(v = ex_value("fetch", argc, argv, &i)) ||
                !ex_long("fetch", "--parallel", v, 1, 1000, &parallel))
                return ex_usage(0, usage);
        } else if (!strcmp(a, "--timeout")) {
            if (!(v = ex_value("fetch", argc, argv, &i)) ||
                !ex_secs("fetch", "--timeout", v, &timeout_ns))
                return ex_usage(0, usage);
        } else if (!strcmp(a, "--workers")) {
            if (!(v = ex_value("fetch", argc, argv, &i)) ||
                !ex_long("fetch", "--workers", v, 1, 256, &workers))
                return ex_usage(0, usage);
        } else if (!strcmp(a, "--cacert")) {
            if (!(jb.cacert = ex_value("fetch", argc, argv, &i)))
                return ex_usage(0, usage);
        } else if (a[0] == '-' && a[1]) {
            ex_bad("fetch", "unknown option", a);
            return ex_usage(0, usage);
        } else {
            jb.urls[jb.n++] = argv[i];
        }
    }
    if (jb.n == 0) {
        ex_bad("fetch", "missing", "URL");
        return ex_usage(0, usage);
    }
    jb.timeout_ms = (long)(timeout_ns / 1000000);
    if (jb.timeout_ms == 0)
        jb.timeout_ms = 1;
    jb.next = (int)parallel; /* fetch_all reads it as the fiber count */
    jb.res = calloc((size_t)jb.n, sizeof *jb.res);
    pthread_mutex_init(&jb.mu, NULL);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    struct fut_runtime *rt;
    intptr_t bad = 1;
    struct fut_rt_config cfg;
    fut_rt_config_init(&cfg);
    if (workers > 0) {
        cfg.flavor = FUT_RT_MULTI_THREAD;
        cfg.workers = (int)workers;
    }
    if (fut_runtime_new(&cfg, &rt) == 0) {
        fut_fiber_run(rt, fetch_all, &jb, NULL, &bad);
        fut_runtime_free(rt);
    }
    curl_global_cleanup();
    pthread_mutex_destroy(&jb.mu);
    free(jb.res);
    free(jb.urls);
    return bad ? 1 : 0;
}
