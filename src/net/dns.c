/* SPDX-License-Identifier: MIT */
/* Name resolution: getaddrinfo(3) on the blocking pool. The job's payload
 * holds copies of the host, service and hints; a result nobody takes is
 * freed by the job's discard. */
#include <string.h>

#include "fut/net.h"
#include "io/io_internal.h"
#include "platform/sys.h"

struct dns_job {
    struct addrinfo hints;
    int has_hints;
    int host_off, serv_off; /* offsets into 'names', -1 = NULL */
    struct addrinfo *res;
    char names[];
};

static intptr_t dns_run(struct fut__job *j)
{
    struct dns_job *p = fut__job_payload(j);
    const char *host = p->host_off >= 0 ? p->names + p->host_off : NULL;
    const char *serv = p->serv_off >= 0 ? p->names + p->serv_off : NULL;
    p->res = NULL;
    return fut__sys_getaddrinfo(host, serv, p->has_hints ? &p->hints : NULL,
                                &p->res);
}

static void dns_discard(struct fut__job *j, intptr_t value)
{
    struct dns_job *p = fut__job_payload(j);
    if (value == 0 && p->res)
        freeaddrinfo(p->res);
}

static int dns_make(struct fut_getaddrinfo *f)
{
    size_t hl = f->host ? strlen(f->host) + 1 : 0;
    size_t sl = f->service ? strlen(f->service) + 1 : 0;
    struct fut__job *j =
        fut__job_new(sizeof(struct dns_job) + hl + sl, dns_run, dns_discard);
    if (!j)
        return FUT_ENOMEM;
    struct dns_job *p = fut__job_payload(j);
    memset(&p->hints, 0, sizeof p->hints);
    p->hints.ai_flags = f->hints[0];
    p->hints.ai_family = f->hints[1];
    p->hints.ai_socktype = f->hints[2];
    p->hints.ai_protocol = f->hints[3];
    p->has_hints = f->has_hints;
    p->host_off = f->host ? 0 : -1;
    p->serv_off = f->service ? (int)hl : -1;
    if (hl)
        memcpy(p->names, f->host, hl);
    if (sl)
        memcpy(p->names + hl, f->service, sl);
    f->job = j;
    return 0;
}

static int dns_poll(struct fut_future *fb, struct fut_context *cx)
{
    struct fut_getaddrinfo *f = (struct fut_getaddrinfo *)fb;
    if (!f->host && !f->service) {
        f->result = FUT_EINVAL;
        return FUT_READY;
    }
    if (!f->job) {
        int r = dns_make(f);
        if (r < 0) {
            f->result = r;
            return FUT_READY;
        }
    }
    struct fut__job *j = f->job;
    intptr_t v;
    int r = fut__job_poll(&j, cx, &v);
    f->job = j;
    if (r == FUT_PENDING)
        return FUT_PENDING;
    if (r != FUT_READY) {
        f->result = r;
        return FUT_READY;
    }
    struct dns_job *p = fut__job_payload(j);
    f->result = (int)v;
    f->res = v == 0 ? p->res : NULL;
    fut__job_release(&j);
    f->job = NULL;
    return FUT_READY;
}

static void dns_drop(struct fut_future *fb)
{
    struct fut_getaddrinfo *f = (struct fut_getaddrinfo *)fb;
    struct fut__job *j = f->job;
    fut__job_drop(&j);
    f->job = NULL;
}

static const struct fut_future_vtable dns_vt = {dns_poll, dns_drop,
                                                "getaddrinfo", NULL};

void fut_getaddrinfo_init(struct fut_getaddrinfo *f, const char *host,
                          const char *service, const struct addrinfo *hints)
{
    FUT_ARG_VOID(f, "'f' is NULL");
    fut_future_init(&f->base, &dns_vt);
    f->host = host;
    f->service = service;
    memset(f->hints, 0, sizeof f->hints);
    f->has_hints = hints != NULL;
    if (hints) {
        f->hints[0] = hints->ai_flags;
        f->hints[1] = hints->ai_family;
        f->hints[2] = hints->ai_socktype;
        f->hints[3] = hints->ai_protocol;
    }
    f->job = NULL;
    f->result = 0;
    f->res = NULL;
}
