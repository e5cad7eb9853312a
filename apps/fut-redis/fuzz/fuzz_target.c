/* SPDX-License-Identifier: MIT */
/* The fuzz target of fut-redis: RESP parsing and command dispatch, in
 * process (no sockets, no runtime). One input is one connection's byte
 * stream: its first byte picks the read size (1..64 bytes per read, so
 * commands are split at every place), the rest is fed to a parser as a
 * connection would, and every command it yields runs against a keyspace
 * and a client, as server.c runs them. Replies are thrown away as if
 * written. The keyspace is emptied after each input, so inputs do not
 * depend on each other.
 *
 * Built twice: as a libFuzzer program (redis_fuzz, clang
 * -fsanitize=fuzzer) and into the test redis_fuzz_replay, which runs the
 * seed corpus and the regression inputs in every configuration. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "cmd.h"
#include "pubsub.h"
#include "server.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct server *the_server(void)
{
    static struct server srv;
    static int ready;
    if (!ready) {
        struct server_config cfg;
        server_config_init(&cfg);
        /* Redis' 512 MB bulk limit would let one input ask for 512 MB;
         * proto-max-bulk-len is configurable, 1 MB here (Redis' floor). */
        cfg.lim.max_bulk = 1024 * 1024;
        cfg.maxmemory = 64LL * 1024 * 1024; /* OOM paths, bounded RSS */
        if (server_init(&srv, &cfg) != 0)
            __builtin_trap();
        ready = 1;
    }
    return &srv;
}

/* Runs the commands complete in the parser; 0 once the client closes. */
static int run(struct server *srv, struct client *cl, struct resp_parser *p)
{
    int r;
    while ((r = resp_next(p)) == RESP_CMD) {
        cmd_dispatch(srv, cl, resp_argv(p), resp_argc(p));
        if (cl->out.oom || cl->close_after_reply)
            return 0;
        cl->out.sent = cl->out.len; /* "written" */
        resp_out_consume(&cl->out);
    }
    return r != RESP_ERROR;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    struct server *srv = the_server();
    size_t step = (size_t)(data[0] % 64) + 1;
    data++;
    size--;
    struct client cl;
    memset(&cl, 0, sizeof cl);
    cl.id = 1;
    cl.srv = srv;
    resp_out_init(&cl.out);
    struct resp_parser p;
    if (resp_parser_init(&p, &srv->cfg.lim) != 0)
        return 0;
    for (size_t done = 0; done < size;) {
        size_t room;
        char *dst = resp_prepare_read(&p, &room);
        if (!dst)
            break;
        size_t n = size - done < step ? size - done : step;
        n = n < room ? n : room;
        memcpy(dst, data + done, n);
        resp_commit_read(&p, n);
        done += n;
        if (!run(srv, &cl, &p))
            break;
    }
    pubsub_client_gone(srv, &cl);
    resp_parser_fini(&p);
    resp_out_fini(&cl.out);
    free(cl.name);
    db_lock_all(&srv->db);
    db_flush(&srv->db);
    db_unlock_all(&srv->db);
    return 0;
}
