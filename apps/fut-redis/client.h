/* SPDX-License-Identifier: MIT */
/* client: the per-connection state that commands see (server.c owns the
 * connection task; this is what it hands to cmd_dispatch).
 *
 * Rules: a client is touched only by its connection's task, except
 * 'sub->queued' and 'sub->kill', which publishers on other tasks (other
 * workers, with --workers) update atomically - see pubsub.h.
 */
#ifndef FUT_REDIS_CLIENT_H
#define FUT_REDIS_CLIENT_H

#include <stdint.h>

#include "resp.h"

struct server;
struct subscriber;

struct client {
    uint64_t id; /* CLIENT ID / HELLO id, from 1 */
    struct server *srv;
    struct resp_out out;    /* replies not yet written */
    char *name;             /* CLIENT SETNAME (malloc), or NULL */
    int close_after_reply;  /* QUIT or a protocol error */
    struct subscriber *sub; /* pub/sub state once subscribed, or NULL */
};

#endif
