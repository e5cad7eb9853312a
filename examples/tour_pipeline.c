/* SPDX-License-Identifier: MIT */
/* The tour's pipeline: producers -> a bounded mpsc -> workers under a
 * semaphore -> a broadcast of the results to every subscriber.
 *
 *   producer 0 --\                      /-- worker (permit) --\
 *   producer 1 ---+-- mpsc(capacity 2) -+-- worker (permit) ---+-- broadcast
 *                  (backpressure)  dispatcher  ... at most 2    --> subscriber A
 *                                                                --> subscriber B
 *
 * Everything runs as tasks of one current-thread runtime. tour_pipeline()
 * prints each step and returns 0 when both subscribers got every result
 * and no more than PERMITS workers ever ran at once. Build it alone with
 * -DTOUR_PIPELINE_MAIN for a main() that runs it.
 *
 * Run: it is section 8 of the tour (bash scripts/tour.sh, see tour.c);
 * alone: cc -std=c11 -D_GNU_SOURCE -DTOUR_PIPELINE_MAIN
 * examples/tour_pipeline.c $(pkg-config --cflags --libs fut).
 */
#include <stdio.h>
#include <string.h>

#include "fut.h"

int tour_pipeline(void);

#define PRODUCERS 2
#define JOBS_EACH 3
#define JOBS (PRODUCERS * JOBS_EACH)
#define QUEUE_CAP 2
#define PERMITS 2
#define WORK_YIELDS 3

struct job {
    int producer;
    int n;
};

struct result {
    int producer;
    int n;
    long value; /* n * n, computed by a worker */
};

/* Shared by the tasks (one thread: plain variables are fine). */
static struct fut_semaphore permits;
static int in_flight, max_in_flight;

/* ------------------------------------------------------------ producer */

struct producer {
    struct fut_future base;
    struct fut_mpsc_tx tx;
    struct fut_mpsc_send send;
    struct job job;
    int id, i;
};

static int producer_poll(struct fut_future *f, struct fut_context *cx)
{
    struct producer *p = (struct producer *)f;
    FUT_BEGIN(f);
    for (p->i = 0; p->i < JOBS_EACH; p->i++) {
        p->job.producer = p->id;
        p->job.n = p->id * 10 + p->i;
        if (fut_mpsc_try_send(&p->tx, &p->job) == 0) {
            printf("  producer %d: job %d queued\n", p->id, p->job.n);
            continue;
        }
        printf("  producer %d: queue full, waiting to send job %d\n", p->id,
               p->job.n);
        fut_mpsc_send_init(&p->send, &p->tx, &p->job);
        FUT_AWAIT(f, &p->send);
        if (p->send.result != 0)
            break;
        printf("  producer %d: job %d queued after waiting\n", p->id,
               p->job.n);
    }
    printf("  producer %d: done, dropping its sender\n", p->id);
    fut_mpsc_tx_drop(&p->tx);
    FUT_END(f);
}

static void producer_cleanup(struct fut_future *f)
{
    fut_mpsc_tx_drop(&((struct producer *)f)->tx);
}

FUT_ASYNC_VTABLE(producer_vt, "producer", producer_poll, producer_cleanup);

/* -------------------------------------------------------------- worker */

struct worker {
    struct fut_future base;
    struct job job;
    struct fut_broadcast_tx out;
    struct fut_semaphore_acquire acq;
    struct fut_yield y;
    int k;
};

static int worker_poll(struct fut_future *f, struct fut_context *cx)
{
    struct worker *w = (struct worker *)f;
    FUT_BEGIN(f);
    fut_semaphore_acquire_init(&w->acq, &permits, 1);
    FUT_AWAIT(f, &w->acq);
    if (++in_flight > max_in_flight)
        max_in_flight = in_flight;
    printf("  worker %d: got a permit (%d running)\n", w->job.n, in_flight);
    for (w->k = 0; w->k < WORK_YIELDS; w->k++) {
        fut_yield_init(&w->y); /* "work" that lets the others run */
        FUT_AWAIT(f, &w->y);
    }
    {
        struct result r = {w->job.producer, w->job.n,
                           (long)w->job.n * w->job.n};
        int subs = fut_broadcast_send(&w->out, &r);
        printf("  worker %d: result %ld broadcast to %d subscribers\n",
               w->job.n, r.value, subs);
    }
    in_flight--;
    fut_semaphore_release(&w->acq.permit);
    fut_broadcast_tx_drop(&w->out);
    FUT_END(f);
}

static void worker_cleanup(struct fut_future *f)
{
    struct worker *w = (struct worker *)f;
    fut_semaphore_release(&w->acq.permit); /* no-op when empty */
    fut_broadcast_tx_drop(&w->out);
}

FUT_ASYNC_VTABLE(worker_vt, "worker", worker_poll, worker_cleanup);

/* ---------------------------------------------------------- dispatcher */

/* Takes jobs off the queue and spawns a worker for each; each worker
 * gets its own clone of the broadcast sender. */
struct dispatcher {
    struct fut_future base;
    struct fut_mpsc_rx rx;
    struct fut_broadcast_tx out;
    struct fut_mpsc_recv recv;
    struct job job;
    int spawned;
};

static int dispatcher_poll(struct fut_future *f, struct fut_context *cx)
{
    struct dispatcher *d = (struct dispatcher *)f;
    FUT_BEGIN(f);
    for (;;) {
        fut_mpsc_recv_init(&d->recv, &d->rx, &d->job);
        FUT_AWAIT(f, &d->recv);
        if (d->recv.result != 0)
            break;
        {
            struct worker w;
            memset(&w, 0, sizeof w);
            fut_future_init(&w.base, &worker_vt);
            w.job = d->job;
            fut_broadcast_tx_clone(&d->out, &w.out);
            printf("  dispatcher: job %d from producer %d -> new worker\n",
                   d->job.n, d->job.producer);
            if (fut_spawn(NULL, &w, sizeof w, NULL) != 0) {
                fut_broadcast_tx_drop(&w.out);
                break;
            }
            d->spawned++;
        }
    }
    printf("  dispatcher: queue closed after %d jobs; dropping its "
           "broadcast sender\n",
           d->spawned);
    fut_broadcast_tx_drop(&d->out);
    fut_mpsc_rx_drop(&d->rx);
    FUT_END(f);
}

static void dispatcher_cleanup(struct fut_future *f)
{
    struct dispatcher *d = (struct dispatcher *)f;
    fut_broadcast_tx_drop(&d->out);
    fut_mpsc_rx_drop(&d->rx);
}

FUT_ASYNC_VTABLE(dispatcher_vt, "dispatcher", dispatcher_poll,
                 dispatcher_cleanup);

/* ---------------------------------------------------------- subscriber */

struct subscriber {
    struct fut_future base;
    struct fut_broadcast_rx rx;
    struct fut_broadcast_recv recv;
    struct result r;
    char name;
    int count;
    long sum;
    int lagged;
};

static int subscriber_poll(struct fut_future *f, struct fut_context *cx)
{
    struct subscriber *s = (struct subscriber *)f;
    FUT_BEGIN(f);
    for (;;) {
        fut_broadcast_recv_init(&s->recv, &s->rx, &s->r);
        FUT_AWAIT(f, &s->recv);
        if (s->recv.result == FUT_ECLOSED)
            break;
        if (s->recv.result == FUT_ELAGGED) {
            s->lagged += (int)s->recv.lagged;
            continue;
        }
        s->count++;
        s->sum += s->r.value;
        printf("  subscriber %c: job %d -> %ld\n", s->name, s->r.n,
               s->r.value);
    }
    printf("  subscriber %c: every sender gone; %d results, sum %ld\n",
           s->name, s->count, s->sum);
    fut_broadcast_rx_drop(&s->rx);
    FUT_END(f);
}

static void subscriber_cleanup(struct fut_future *f)
{
    fut_broadcast_rx_drop(&((struct subscriber *)f)->rx);
}

FUT_ASYNC_VTABLE(subscriber_vt, "subscriber", subscriber_poll,
                 subscriber_cleanup);

/* ---------------------------------------------------------------- run */

static int spawn_subscriber(struct fut_runtime *rt,
                            struct fut_broadcast_rx *rx, char name,
                            struct fut_join *j)
{
    struct subscriber s;
    memset(&s, 0, sizeof s);
    fut_future_init(&s.base, &subscriber_vt);
    s.rx = *rx;
    s.name = name;
    return fut_spawn(rt, &s, sizeof s, j);
}

int tour_pipeline(void)
{
    printf("pipeline: %d producers -> mpsc(capacity %d) -> workers under a "
           "semaphore(%d) -> broadcast -> 2 subscribers\n",
           PRODUCERS, QUEUE_CAP, PERMITS);
    struct fut_runtime *rt;
    if (fut_runtime_new(NULL, &rt) != 0)
        return 1;
    fut_semaphore_init(&permits, PERMITS);
    in_flight = max_in_flight = 0;

    struct fut_mpsc_tx jobs_tx;
    struct fut_mpsc_rx jobs_rx;
    struct fut_broadcast_tx res_tx;
    struct fut_broadcast_rx sub_a, sub_b;
    int rc = 1;
    if (fut_mpsc_new(QUEUE_CAP, sizeof(struct job), NULL, &jobs_tx,
                     &jobs_rx) != 0)
        goto fail_rt;
    if (fut_broadcast_new(JOBS, sizeof(struct result), &res_tx, &sub_a) != 0)
        goto fail_mpsc;
    fut_broadcast_subscribe(&res_tx, &sub_b);

    struct fut_join ja, jb;
    spawn_subscriber(rt, &sub_a, 'A', &ja);
    spawn_subscriber(rt, &sub_b, 'B', &jb);
    for (int i = 0; i < PRODUCERS; i++) {
        struct producer p;
        memset(&p, 0, sizeof p);
        fut_future_init(&p.base, &producer_vt);
        p.id = i;
        fut_mpsc_tx_clone(&jobs_tx, &p.tx);
        fut_spawn(rt, &p, sizeof p, NULL);
    }
    fut_mpsc_tx_drop(&jobs_tx); /* the producers hold the only senders */
    struct dispatcher d;
    memset(&d, 0, sizeof d);
    fut_future_init(&d.base, &dispatcher_vt);
    d.rx = jobs_rx;
    d.out = res_tx; /* moved: the dispatcher and its workers send */
    fut_spawn(rt, &d, sizeof d, NULL);

    /* Wait for both subscribers: they finish once every broadcast sender
     * (the dispatcher's and each worker's) is gone. */
    fut_block_on(rt, &ja.base);
    fut_block_on(rt, &jb.base);
    long want = 0;
    for (int p = 0; p < PRODUCERS; p++)
        for (int i = 0; i < JOBS_EACH; i++)
            want += (long)(p * 10 + i) * (p * 10 + i);
    struct subscriber *a = fut_join_output(&ja);
    struct subscriber *b = fut_join_output(&jb);
    int ok = ja.result == 0 && jb.result == 0 && a && b && a->count == JOBS &&
             b->count == JOBS && a->sum == want && b->sum == want &&
             !a->lagged && !b->lagged && max_in_flight <= PERMITS &&
             fut_semaphore_available(&permits) == PERMITS;
    printf("pipeline: %s (%d results each, sum %ld, at most %d workers at "
           "once)\n",
           ok ? "ok" : "FAILED", a ? a->count : -1, want, max_in_flight);
    fut_drop(&ja.base);
    fut_drop(&jb.base);
    rc = ok ? 0 : 1;
    goto fail_rt;

fail_mpsc:
    fut_mpsc_tx_drop(&jobs_tx);
    fut_mpsc_rx_drop(&jobs_rx);
fail_rt:
    fut_runtime_free(rt);
    fut_semaphore_fini(&permits);
    return rc;
}

#ifdef TOUR_PIPELINE_MAIN
#include "cmdline.h"

int main(int argc, char **argv)
{
    if (argc > 1) { /* it takes no arguments: --help says so */
        int help = argc == 2 && ex_is_help(argv[1]);
        if (!help)
            ex_bad("tour_pipeline", "unknown argument", argv[1]);
        return ex_usage(help, "usage: tour_pipeline\n"
                              "  The tour's pipeline section on its own "
                              "(no arguments).\n");
    }
    return tour_pipeline();
}
#endif
