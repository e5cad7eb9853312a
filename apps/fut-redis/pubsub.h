/* SPDX-License-Identifier: MIT */
/* pubsub: channels and patterns, over fut's mpsc channels.
 *
 * Every subscribed client has a 'struct subscriber' with an unbounded fut
 * mpsc channel whose messages are pointers to refcounted, ready-encoded
 * RESP messages (one allocation per PUBLISH and channel, shared by all of
 * its subscribers; one per matching pattern). PUBLISH runs on the
 * publisher's task: it looks the channel up in the registry and sends the
 * pointer to each subscriber (fut_mpsc_try_send: never waits). The
 * subscriber's connection task has the channel's receive future in its
 * select, so it wakes, moves the messages into its output buffer and
 * writes them.
 *
 * Rules:
 *   - the registry (channels, patterns, and each subscriber's lists) is
 *     behind one pthread mutex, held only without awaits (a PUBLISH or a
 *     SUBSCRIBE runs to its end in one poll); a subscriber is removed from
 *     the registry under that mutex before its channel is dropped, so a
 *     publisher holding the mutex never sends to a freed subscriber;
 *   - 'queued' counts the bytes sent to the subscriber and not yet moved
 *     into its output buffer: publishers add (relaxed), the connection
 *     subtracts when it receives; 'outbuf' is the connection's unsent
 *     output, stored by the connection (relaxed) after every change. Both
 *     are estimates for the limit, and order nothing;
 *   - the output limit (Redis' client-output-buffer-limit pubsub, 32 MB
 *     hard, 8 MB soft for 60 s): a publisher that finds queued + outbuf
 *     over the hard limit does not send; it sets 'kill' (the first one to
 *     set it, by exchange) and sends one NULL message, which wakes the
 *     connection to close. The connection checks both limits itself
 *     too, whenever messages reach its output (server.c), and sets 'kill'
 *     the same way; whoever sets it first counts the disconnection (INFO
 *     client_output_buffer_limit_disconnections), so it is counted once,
 *     as soon as the decision is made. A subscriber that never reads
 *     holds at most the hard limit plus one message, plus what the
 *     kernel's socket buffers took.
 */
#ifndef FUT_REDIS_PUBSUB_H
#define FUT_REDIS_PUBSUB_H

#include <stdatomic.h>
#include <stddef.h>

#include "fut.h"
#include "psnames.h"

struct client;
struct server;

struct psmsg {
    atomic_int ref; /* one per subscriber it was sent to (acq_rel) */
    size_t len;
    char data[]; /* the RESP message */
};

struct subscriber {
    struct client *cl;
    struct fut_mpsc_tx tx; /* publishers send through it (registry lock) */
    struct fut_mpsc_rx rx; /* the connection task receives */
    atomic_llong queued;   /* bytes sent, not yet received */
    atomic_llong outbuf;   /* the connection's unsent output */
    atomic_int kill;       /* over the hard limit: close */
    /* subscriptions, in order and indexed by name (psnames.h; registry
     * lock for writers; the owner's task reads its own counts) */
    struct ps_names chans;
    struct ps_names pats;
    int64_t soft_since; /* connection: over the soft limit since (ns) */
};

int pubsub_init(struct server *srv);
void pubsub_fini(struct server *srv);

/* Subscriptions of 'cl' (channels + patterns); 0 when not subscribed. */
size_t pubsub_count_of(const struct client *cl);
/* Unsubscribes 'cl' from everything and frees its subscriber. */
void pubsub_client_gone(struct server *srv, struct client *cl);
/* Releases a message reference (the mpsc dtor, and after writing). */
void psmsg_unref(struct psmsg *m);
/* Active subscriptions in the registry (INFO). */
void pubsub_stats(struct server *srv, size_t *channels, size_t *patterns);

/* Redis' stringmatchlen (glob: * ? [...] \), case-sensitive. */
int glob_match(const char *pat, size_t plen, const char *s, size_t slen);

#endif
