/* SPDX-License-Identifier: MIT */
/* The install check's consumer of libfut-hiredis (pkg-config
 * fut-hiredis): compiles against the installed fut/hiredis.h, links
 * libfut_hiredis, libfut and hiredis, and makes a call of each. No
 * server: a connect to a socket that is not there must fail cleanly. */
#include <fut.h>
#include <fut/hiredis.h>
#include <stdio.h>

static intptr_t try_connect(void *arg)
{
    struct fut_redis *r = NULL;
    return fut_redis_connect_unix((const char *)arg, &r);
}

int main(void)
{
    struct fut_runtime *rt = NULL;
    if (fut_runtime_new(NULL, &rt) != 0)
        return 1;
    struct fut_lazy l;
    fut_lazy_init(&l, try_connect, "/nonexistent/redis.sock");
    int rc = fut_block_on(rt, &l.base);
    fut_drop(&l.base);
    fut_runtime_free(rt);
    if (rc != 0 || l.value >= 0 || fut_redis_live() != 0) {
        fprintf(stderr, "hiredis consumer: %d %ld\n", rc, (long)l.value);
        return 1;
    }
    puts("hiredis consumer: ok");
    return 0;
}
