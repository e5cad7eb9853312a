/* SPDX-License-Identifier: MIT */
/* The mpsc channel's core, shared by its two flavors (never installed):
 * the channel block, the flavor table through which the public functions
 * of mpsc_chan.c reach the bounded flavor (mpsc_bounded.c, a lock-free
 * ring) or the unbounded one (mpsc_unbounded.c, a growable ring under a
 * lock), and the handle lifetime both use (mpsc_chan.c), as Tokio's
 * chan.rs sits under bounded.rs and unbounded.rs.
 *
 * Dependencies point one way: the flavor files call the core by name;
 * the core reaches a flavor only through 'ch->ops', set by the flavor's
 * constructor (fut_mpsc_new, fut_mpsc_unbounded_new). Every public entry
 * point shared by the flavors makes one indirect call, where it used to
 * test a flag; the flavor's function inlines its own fast path.
 */
#ifndef FUT_SYNC_MPSC_CHAN_H
#define FUT_SYNC_MPSC_CHAN_H

#include <string.h>

#include "fut/chan.h"
#include "sync/sync_internal.h"

struct fut__mpsc;

/* What differs between the flavors. Each entry is called by the public
 * function of the same name in mpsc_chan.c, after its argument and
 * handle checks, with a channel that is not NULL. */
struct fut__mpsc_ops {
    /* senders */
    int (*try_send)(struct fut__mpsc *ch, const void *msg);
    /* The poll of a send future: sets s->result when FUT_READY. The
     * future and context come first, where its poll has them, so the
     * forward is a jump. */
    int (*send_poll)(struct fut_mpsc_send *s, struct fut_context *cx,
                     struct fut__mpsc *ch);
    /* Takes a credit for a permit: 0 or an error (nothing taken). */
    int (*try_reserve)(struct fut__mpsc *ch);
    /* Gets a credit for a reserve future: FUT_READY with '*r' = 0 (held)
     * or an error; or FUT_PENDING. */
    int (*reserve_poll)(struct fut__mpsc *ch, struct fut__wnode *w,
                        struct fut_context *cx, int *r);
    /* Drop of a send or reserve future whose node is 'w'. */
    void (*cancel)(struct fut__mpsc *ch, struct fut__wnode *w);
    int (*is_closed)(struct fut__mpsc *ch);
    /* The last sender went away (fut__mpsc_sender_release). */
    void (*wake_rx)(struct fut__mpsc *ch);
    /* receiver */
    int (*try_recv)(struct fut__mpsc *ch, void *out);
    /* fut_mpsc_poll_recv's step; sets '*registered' when it left a
     * waker with the channel. */
    int (*poll_recv)(struct fut__mpsc *ch, struct fut_context *cx, void *out,
                     int *result, int *registered);
    /* The poll of a recv future (ends with fut__mpsc_recv_done);
     * arguments as send_poll's. */
    int (*recv_poll)(struct fut_mpsc_recv *r, struct fut_context *cx,
                     struct fut__mpsc *ch);
    /* Drops the waker a receive registered. */
    void (*withdraw)(struct fut__mpsc *ch);
    void (*close)(struct fut__mpsc *ch);
    /* The receiver's drop, after 'rx_gone' was set: refuse sends from
     * now on and dispose of the queued messages. */
    void (*rx_drop)(struct fut__mpsc *ch);
    /* The last reference went: dispose of what is left (the block itself
     * is freed by the core). */
    void (*free)(struct fut__mpsc *ch);
};

struct fut__mpsc {
    /* read-only after creation */
    size_t msg_size;
    size_t stride;     /* bounded: bytes per slot */
    size_t alloc_size; /* bytes of this block */
    uint32_t mask;     /* bounded: slots - 1 */
    uint32_t cap;      /* bounded: capacity */
    const struct fut__mpsc_ops *ops;
    void (*dtor)(void *msg);
    unsigned char *slots; /* bounded: the ring, after this struct */
    fut__aword senders;   /* senders + permits */
    fut__aword refs;      /* senders + permits + receiver */
    fut__aword rx_gone;   /* 1 once the receiver was dropped */
    char pad0[64];
    struct fut__sem sem; /* bounded: W (see its rules) and sender queue */
    char pad1[64];
    /* the receiver's (read by the last handle at free time) */
    uint32_t head;               /* bounded */
    int ended;                   /* the receiver returned the end */
    struct fut__awaker rx_waker; /* bounded */
    /* unbounded: under 'ulock' */
    struct fut__lock ulock;
    int uclosed;
    unsigned char *ubuf;
    size_t ucap, uhead, ulen;
    struct fut_waker uwaker;
    char pad2[64];
};

/* ------------------------------------------------ mpsc_chan.c: creation */

/* Clears 'tx' and 'rx'; FUT_EINVAL for a message size no flavor takes. */
int fut__mpsc_prepare(size_t msg_size, struct fut_mpsc_tx *tx,
                      struct fut_mpsc_rx *rx);

/* A zeroed block of sizeof(struct fut__mpsc) + 'extra' bytes ('slots'
 * points after the struct) with the shared fields set: one sender, two
 * references. NULL when out of memory. */
struct fut__mpsc *fut__mpsc_alloc(const struct fut__mpsc_ops *ops,
                                  size_t msg_size, size_t extra,
                                  void (*dtor)(void *msg));

/* Hands the new channel to its first sender and its receiver. */
void fut__mpsc_open(struct fut__mpsc *ch, struct fut_mpsc_tx *tx,
                    struct fut_mpsc_rx *rx);

/* ------------------------------------------------ mpsc_chan.c: lifetime */

/* A sender or a permit comes (the caller holds a reference already). */
void fut__mpsc_sender_acquire(struct fut__mpsc *ch);

/* A sender or a permit goes away: the last one wakes the receiver. */
void fut__mpsc_sender_release(struct fut__mpsc *ch);

/* Drops a reference: the last one frees the block. */
void fut__mpsc_ref_release(struct fut__mpsc *ch);

/* The end of a recv future's poll that is READY: withdraws the waker an
 * earlier PENDING poll registered here rather than at drop, so a drop
 * that comes late can never take the waker of a newer receive. */
static inline void fut__mpsc_recv_done(struct fut__mpsc *ch,
                                       struct fut_mpsc_recv *r)
{
    if (r->registered) {
        ch->ops->withdraw(ch);
        r->registered = 0;
    }
}

#endif /* FUT_SYNC_MPSC_CHAN_H */
