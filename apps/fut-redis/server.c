/* SPDX-License-Identifier: MIT */
/* server: how fut-redis serves connections on fut.
 *
 * Tasks:
 *   - one acceptor per listener (TCP per --bind address, the Unix socket):
 *     accepts, applies --maxclients, spawns a connection task;
 *   - one task per connection (conn_poll), the heart of the server;
 *   - the cron task: Redis' active expiry on a fut interval timer
 *     (10 times a second, as Redis' default hz);
 *   - the block_on future (server_poll): waits for SIGINT/SIGTERM, then
 *     shuts down.
 *
 * A connection task runs this loop (the rules of its state machine):
 *   1. READ: waits for bytes (fut_io_read into the parser's buffer), and,
 *      once the client has subscribed, for pub/sub messages at the same
 *      time (fut_select2 of the read and the channel's receive; both are
 *      cancel-safe, so the loser loses nothing). With --timeout, and no
 *      subscription, the wait is under a fut_timeout.
 *   2. RUN: every complete command of that read runs to its end in this
 *      poll (commands never await: cmd.h); replies are appended to the
 *      client's output. A protocol error appends Redis' error reply and
 *      marks the client to close after the reply.
 *   3. WRITE: the whole output of the batch goes out, one write(2) per
 *      readiness (all replies of one read batch in one write, unless the
 *      socket takes less); a subscriber also receives messages meanwhile
 *      (the pump, selected against the write: it never makes the write
 *      lose, only the limit does, since a write in flight on io_uring
 *      cannot be dropped without losing track of its bytes); they wait
 *      in 'side' and join the output after the write, so a client that
 *      does not read is cut at the output limit instead of blocking its
 *      publishers (pubsub.h).
 *   4. back to READ, or close (QUIT, protocol error, EOF, error, idle
 *      timeout, output limit, no memory, shutdown).
 * Dropping the task in any state (shutdown, runtime free) drops the
 * awaited future and then runs conn_cleanup, which releases everything.
 *
 * Shutdown handshake (graceful: finish the replies in flight, then stop):
 * a connection increments 'busy' after a read and before it runs the
 * batch, then reads 'shutting'; the signal task stores 'shutting' and then
 * waits for 'busy' to be 0. Both seq_cst (a Dekker pair): either the
 * connection sees 'shutting' and closes without running the batch, or the
 * signal task sees it busy and waits for its replies to be written.
 */
#include "server.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "cmd.h"
#include "fut.h"
#include "pubsub.h"

#define NS_PER_MS 1000000LL
#define NS_PER_S 1000000000LL
#define GRACE_NS (5 * NS_PER_S) /* shutdown: time for replies in flight */
#define CRON_PERIOD_NS (100 * NS_PER_MS) /* Redis' hz 10 */
/* Active expiry per cron tick: at most 25% of the period (Redis'
 * ACTIVE_EXPIRE_CYCLE_SLOW_TIME_PERC), in steps of SWEEP_STEP entries
 * looked at; a shard is swept again while a quarter of a step expired
 * (Redis' 10% "stale keys" threshold is close; 25% keeps steps cheap). */
#define CRON_BUDGET_NS (CRON_PERIOD_NS / 4)
#define SWEEP_STEP 64
#define DRAIN_MAX 1024 /* pub/sub messages moved to the output per wake */

void server_config_init(struct server_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->port = 6379;
    cfg->maxclients = 10000;
    cfg->lim.max_bulk = RESP_MAX_BULK_DEFAULT;
    cfg->lim.max_inline = RESP_INLINE_MAX_DEFAULT;
    cfg->pubsub_hard = 32LL * 1024 * 1024;
    cfg->pubsub_soft = 8LL * 1024 * 1024;
    cfg->pubsub_soft_s = 60;
}

int64_t server_now_ms(const struct server *srv)
{
    return srv->unix_ms0 + (fut_time_now() - srv->start_ns) / NS_PER_MS;
}

static long long add(atomic_llong *v, long long d)
{
    return atomic_fetch_add_explicit(v, d, memory_order_relaxed) + d;
}

/* -------------------------------------------------------------- connection */

enum step { STEP_READ, STEP_WRITE, STEP_CLOSE };

struct conn {
    struct fut_future base;
    struct server *srv;
    struct fut_io *io;
    struct client cl;
    struct resp_parser rp;
    int busy;                /* counted in srv->busy */
    int selecting;           /* 'sel' is the awaited future (subscriber) */
    struct fut_future *wait; /* what step 1 or 3 awaits */
    struct fut_io_read rd;
    struct fut_io_write wr;
    struct fut_mpsc_recv rv; /* a subscriber's next message (read) */
    struct psmsg *msg;       /* rv's output */
    struct pump {            /* a subscriber's messages (write) */
        struct fut_future base;
        struct conn *c;
    } pump;
    struct resp_out side;   /* messages that came during a write */
    struct fut_select2 sel; /* rd against rv, or wr against pump */
    struct fut_timeout tmo; /* --timeout over the read */
};

/* Sets what to await: 'io' alone, or, once the client has a subscriber,
 * 'io' against 'msgs' (the channel's receive or the pump). */
static void arm(struct conn *c, struct fut_future *io,
                struct fut_future *msgs)
{
    c->wait = io;
    c->selecting = c->cl.sub != NULL;
    if (c->selecting) {
        fut_select2_init(&c->sel, io, msgs, FUT_SELECT_BIASED);
        c->wait = &c->sel.base;
    }
}

/* Step 1: the read (and the subscriber's receive, the idle timeout). 0:
 * no memory. */
static int arm_read(struct conn *c)
{
    size_t room;
    char *dst = resp_prepare_read(&c->rp, &room);
    if (!dst)
        return 0;
    fut_io_read_init(&c->rd, c->io, dst, room);
    if (c->cl.sub) /* a read may be dropped: cancel-safe on both backends */
        fut_mpsc_recv_init(&c->rv, &c->cl.sub->rx, &c->msg);
    arm(c, &c->rd.base, &c->rv.base);
    /* Redis does not time out subscribers (clientsCronHandleTimeout). */
    if (c->srv->cfg.timeout_s && pubsub_count_of(&c->cl) == 0) {
        fut_timeout_init(&c->tmo, c->wait,
                         fut_time_now() + c->srv->cfg.timeout_s * NS_PER_S);
        c->wait = &c->tmo.base;
    }
    return 1;
}

static int pump_poll(struct fut_future *f, struct fut_context *cx);
static const struct fut_future_vtable pump_vt = {pump_poll, NULL,
                                                 "pubsub_pump", NULL};

/* Step 3: one write of what is left of the output; a subscriber's
 * messages meanwhile go to the pump, not to a receive that would win
 * against the write: a write in flight must not be dropped (on io_uring
 * its bytes may have left already: io.h), except to close. */
static void arm_write(struct conn *c)
{
    struct resp_out *o = &c->cl.out;
    fut_io_write_init(&c->wr, c->io, o->buf + o->sent, o->len - o->sent);
    if (c->cl.sub) {
        fut_future_init(&c->pump.base, &pump_vt);
        c->pump.c = c;
    }
    arm(c, &c->wr.base, &c->pump.base);
}

/* Publishes the unsent size for the publishers' limit check (pubsub.h). */
static void store_outbuf(struct conn *c)
{
    if (c->cl.sub)
        atomic_store_explicit(
            &c->cl.sub->outbuf,
            (long long)(c->cl.out.len - c->cl.out.sent + c->side.len),
            memory_order_relaxed);
}

/* The output limit (Redis' client-output-buffer-limit pubsub): 1 when
 * the client must be cut off. */
static int over_limit(struct conn *c)
{
    const struct server_config *cfg = &c->srv->cfg;
    struct subscriber *s = c->cl.sub;
    long long unsent =
        (long long)(c->cl.out.len - c->cl.out.sent + c->side.len);
    if (cfg->pubsub_hard && unsent > cfg->pubsub_hard)
        return 1;
    if (!cfg->pubsub_soft || unsent <= cfg->pubsub_soft) {
        s->soft_since = 0;
        return 0;
    }
    int64_t now = fut_time_now();
    if (!s->soft_since)
        s->soft_since = now;
    return now - s->soft_since >= cfg->pubsub_soft_s * NS_PER_S;
}

/* Moves one message into 'o' (the output, or 'side' while a write is
 * in flight). 0: the connection must close (a publisher found it over
 * the limit and sent NULL). */
static int take_message(struct conn *c, struct resp_out *o, struct psmsg *m)
{
    if (!m || atomic_load_explicit(&c->cl.sub->kill, memory_order_relaxed)) {
        psmsg_unref(m);
        return 0;
    }
    resp_add_raw(o, m->data, m->len);
    atomic_fetch_sub_explicit(&c->cl.sub->queued, (long long)m->len,
                              memory_order_relaxed);
    psmsg_unref(m);
    return 1;
}

/* The client is cut off at the output limit: counted once per client,
 * by whoever set 'kill' first (a publisher or this connection). */
static enum step cut(struct conn *c)
{
    if (!atomic_exchange_explicit(&c->cl.sub->kill, 1, memory_order_relaxed))
        add(&c->srv->pubsub_killed, 1);
    return STEP_CLOSE;
}

/* The receive won a read: takes its message and what else is queued (up
 * to DRAIN_MAX), then checks the limit. */
static enum step got_messages(struct conn *c)
{
    struct psmsg *m = c->msg;
    c->msg = NULL;
    if (c->rv.result != 0 || !take_message(c, &c->cl.out, m))
        return cut(c);
    for (int i = 0; i < DRAIN_MAX; i++) {
        if (fut_mpsc_try_recv(&c->cl.sub->rx, &m) != 0)
            break;
        if (!take_message(c, &c->cl.out, m))
            return cut(c);
    }
    store_outbuf(c);
    if (c->cl.out.oom)
        return STEP_CLOSE;
    return over_limit(c) ? cut(c) : STEP_WRITE;
}

/* The pump (a write is in flight): moves the messages that come into
 * 'side'; READY only when the client must be cut off (the limit, a
 * publisher's kill, no memory). PENDING with the channel's waker
 * registered, or after waking itself when DRAIN_MAX messages came in one
 * poll (more may be queued: it lets other tasks run first). */
static int pump_poll(struct fut_future *f, struct fut_context *cx)
{
    struct conn *c = ((struct pump *)f)->c;
    for (int i = 0; i < DRAIN_MAX; i++) {
        struct psmsg *m;
        int res;
        if (fut_mpsc_poll_recv(&c->cl.sub->rx, cx, &m, &res) == FUT_PENDING)
            return FUT_PENDING;
        if (res != 0 || !take_message(c, &c->side, m) || c->side.oom)
            return FUT_READY;
        store_outbuf(c);
        if (over_limit(c))
            return FUT_READY;
    }
    fut_waker_wake_by_ref(&cx->waker);
    return FUT_PENDING;
}

/* Step 2: runs every complete command of the batch. */
static void run_commands(struct conn *c)
{
    int r;
    while ((r = resp_next(&c->rp)) == RESP_CMD) {
        cmd_dispatch(c->srv, &c->cl, resp_argv(&c->rp), resp_argc(&c->rp));
        if (c->cl.close_after_reply || c->cl.out.oom)
            return;
    }
    if (r == RESP_ERROR) {
        resp_add_errorf(&c->cl.out, "ERR %s", resp_error(&c->rp));
        c->cl.close_after_reply = 1;
    }
}

/* After step 1: what came, and what to do next. */
static enum step after_read(struct conn *c)
{
    if (c->wait == &c->tmo.base && c->tmo.result != 0) {
        add(&c->srv->timed_out, 1);
        return STEP_CLOSE;
    }
    if (c->selecting && c->sel.winner == 1)
        return got_messages(c);
    if (c->rd.result <= 0)
        return STEP_CLOSE; /* EOF or error */
    resp_commit_read(&c->rp, (size_t)c->rd.result);
    if (!c->busy) {
        c->busy = 1;
        atomic_fetch_add(&c->srv->busy, 1); /* seq_cst: the handshake */
    }
    if (atomic_load(&c->srv->shutting))
        return STEP_CLOSE;
    run_commands(c);
    store_outbuf(c);
    return c->cl.out.oom ? STEP_CLOSE : STEP_WRITE;
}

/* After one write of step 3: the messages that came meanwhile join the
 * output behind what is left of it. */
static enum step after_write(struct conn *c)
{
    if (c->selecting && c->sel.winner == 1)
        return c->side.oom ? STEP_CLOSE : cut(c);
    if (c->wr.result < 0)
        return STEP_CLOSE;
    c->cl.out.sent += (size_t)c->wr.result;
    if (c->side.len) {
        resp_add_raw(&c->cl.out, c->side.buf, c->side.len);
        c->side.len = 0;
        if (c->cl.out.oom)
            return STEP_CLOSE;
    }
    store_outbuf(c);
    return STEP_WRITE;
}

/* Every reply of the batch is written. */
static void batch_done(struct conn *c)
{
    resp_out_consume(&c->cl.out);
    store_outbuf(c);
    if (c->busy) {
        c->busy = 0;
        atomic_fetch_sub(&c->srv->busy, 1);
    }
}

static int conn_poll(struct fut_future *f, struct fut_context *cx)
{
    struct conn *c = (struct conn *)f;
    FUT_BEGIN(f);
    for (;;) {
        if (!arm_read(c))
            break;
        FUT_AWAIT(f, c->wait);
        if (after_read(c) == STEP_CLOSE)
            break;
        while (c->cl.out.sent < c->cl.out.len) {
            arm_write(c);
            FUT_AWAIT(f, c->wait);
            if (after_write(c) == STEP_CLOSE)
                goto done;
        }
        batch_done(c);
        if (c->cl.close_after_reply)
            break;
    }
done:
    FUT_END(f);
}

static void conn_cleanup(struct fut_future *f)
{
    struct conn *c = (struct conn *)f;
    struct server *srv = c->srv;
    pubsub_client_gone(srv, &c->cl);
    resp_parser_fini(&c->rp);
    resp_out_fini(&c->cl.out);
    resp_out_fini(&c->side);
    free(c->cl.name);
    fut_io_close(c->io);
    if (c->busy)
        atomic_fetch_sub(&srv->busy, 1);
    add(&srv->clients, -1);
}
FUT_ASYNC_VTABLE(conn_vt, "redis_conn", conn_poll, conn_cleanup);

/* ---------------------------------------------------------------- accept */

/* Over --maxclients: Redis writes its error without waiting and closes;
 * so does this, with one non-blocking send on the new socket. */
static void reject(struct server *srv, struct fut_io *io)
{
    static const char msg[] = "-ERR max number of clients reached\r\n";
    ssize_t n =
        send(fut_io_fd(io), msg, sizeof msg - 1, MSG_DONTWAIT | MSG_NOSIGNAL);
    (void)n; /* best effort, as Redis */
    fut_io_close(io);
    add(&srv->rejected, 1);
}

static void start_conn(struct server *srv, struct fut_io *io)
{
    add(&srv->total_connections, 1);
    if (add(&srv->clients, 1) > srv->cfg.maxclients) {
        add(&srv->clients, -1);
        reject(srv, io);
        return;
    }
    struct conn c;
    memset(&c, 0, sizeof c);
    fut_future_init(&c.base, &conn_vt);
    c.srv = srv;
    c.io = io;
    c.cl.srv = srv;
    c.cl.id = (uint64_t)add(&srv->next_id, 1);
    resp_out_init(&c.cl.out);
    resp_out_init(&c.side);
    fut_tcp_set_nodelay(io, 1); /* fails harmlessly on a Unix socket */
    /* The parser holds no pointer into 'c', so 'c' may be copied into
     * the task by fut_spawn. */
    if (resp_parser_init(&c.rp, &srv->cfg.lim) != 0 ||
        fut_spawn(NULL, &c, sizeof c, NULL) != 0) {
        resp_parser_fini(&c.rp);
        fut_io_close(io);
        add(&srv->clients, -1);
    }
}

struct acceptor {
    struct fut_future base;
    struct server *srv;
    struct fut_io *listener;
    struct fut_accept acc;
};

static int acceptor_poll(struct fut_future *f, struct fut_context *cx)
{
    struct acceptor *a = (struct acceptor *)f;
    FUT_BEGIN(f);
    for (;;) {
        fut_accept_init(&a->acc, a->listener);
        FUT_AWAIT(f, &a->acc);
        if (a->acc.result < 0) {
            fprintf(stderr, "fut-redis: accept: %s\n",
                    fut_strerror(a->acc.result));
            break;
        }
        start_conn(a->srv, a->acc.conn);
    }
    FUT_END(f);
}
/* The acceptor owns its listener: on the multi-thread runtime the task
 * may be in a poll on another worker when its join handle is dropped, so
 * only the task itself may close it (after its accept was dropped). */
static void acceptor_cleanup(struct fut_future *f)
{
    fut_io_close(((struct acceptor *)f)->listener);
}
FUT_ASYNC_VTABLE(acceptor_vt, "acceptor", acceptor_poll, acceptor_cleanup);

/* ------------------------------------------------------------------ cron */

/* Active expiry: sweeps the shards in turn, for at most CRON_BUDGET_NS
 * per tick; a shard is swept again while its step found many expired
 * keys (Redis' activeExpireCycle, simplified). The budget is read on the
 * runtime's clock (fut_time_now), not the machine's: under simulation
 * the clock is virtual and stands still during a sweep, so a sweep ends
 * when its steps find few expired keys, the same on every run of a seed
 * (the machine's clock made how far it got depend on the host's speed). */
static void expire_cycle(struct server *srv, unsigned *next_shard)
{
    struct db *db = &srv->db;
    int64_t end = fut_time_now() + CRON_BUDGET_NS;
    int64_t now_ms = server_now_ms(srv);
    for (unsigned i = 0; i < db->nshards && fut_time_now() < end; i++) {
        struct shard *s = &db->shards[*next_shard];
        *next_shard = (*next_shard + 1) & (db->nshards - 1);
        while (db_sweep(db, s, now_ms, SWEEP_STEP) > SWEEP_STEP / 4 &&
               fut_time_now() < end)
            ;
    }
}

struct cron {
    struct fut_future base;
    struct server *srv;
    unsigned next_shard;
    struct fut_interval iv;
    struct fut_interval_tick tick;
};

static int cron_poll(struct fut_future *f, struct fut_context *cx)
{
    struct cron *k = (struct cron *)f;
    FUT_BEGIN(f);
    fut_interval_init(&k->iv, 0, CRON_PERIOD_NS, FUT_MISSED_SKIP);
    for (;;) {
        fut_interval_tick_init(&k->tick, &k->iv);
        FUT_AWAIT(f, &k->tick);
        if (k->tick.result != 0)
            break;
        expire_cycle(k->srv, &k->next_shard);
    }
    FUT_END(f);
}

static void cron_cleanup(struct fut_future *f)
{
    struct cron *k = (struct cron *)f;
    if (k->base.resume != 0) /* the interval was initialised */
        fut_stream_drop(&k->iv.base);
}
FUT_ASYNC_VTABLE(cron_vt, "cron", cron_poll, cron_cleanup);

/* ------------------------------------------------------------- listeners */

static int listen_tcp(struct server *srv, struct listeners *ls,
                      const char *host, int port)
{
    struct sockaddr_storage ss;
    socklen_t len;
    if (fut_addr_parse(host, port, &ss, &len) != 0) {
        fprintf(stderr, "fut-redis: --bind %s: not a numeric address\n",
                host);
        return -1;
    }
    int r = fut_tcp_listen((struct sockaddr *)&ss, len, 511, &ls->io[ls->n]);
    if (r < 0) {
        fprintf(stderr, "fut-redis: listen %s:%d: %s\n", host, port,
                fut_strerror(r));
        return -1;
    }
    if (fut_io_local_addr(ls->io[ls->n], &ss, &len) == 0)
        srv->tcp_port = fut_addr_port(&ss); /* the port 0 picked */
    fprintf(stderr, "fut-redis: listening on %s:%d\n", host, srv->tcp_port);
    ls->n++;
    return 0;
}

static int listen_all(struct server *srv, struct listeners *ls)
{
    const struct server_config *cfg = &srv->cfg;
    int port = cfg->port;
    /* Redis: port 0 means no TCP; with no Unix socket either it would not
     * listen at all, so fut-redis takes a free port there instead (tests
     * and benchmarks read it from the "listening on" line). */
    if (port != 0 || !cfg->unixsocket) {
        for (int i = 0; i < (cfg->nbind ? cfg->nbind : 1); i++) {
            const char *host = cfg->nbind ? cfg->bind[i] : "127.0.0.1";
            if (listen_tcp(srv, ls, host, port) != 0)
                return -1;
            port = srv->tcp_port; /* every address on the same port */
        }
    }
    if (cfg->unixsocket) {
        unlink(cfg->unixsocket); /* as Redis: a stale socket file goes */
        int r = fut_unix_listen(cfg->unixsocket, 511, &ls->io[ls->n]);
        if (r < 0) {
            fprintf(stderr, "fut-redis: listen %s: %s\n", cfg->unixsocket,
                    fut_strerror(r));
            return -1;
        }
        fprintf(stderr, "fut-redis: listening on %s\n", cfg->unixsocket);
        ls->n++;
    }
    return 0;
}

static int spawn_acceptors(struct server *srv, struct fut_runtime *rt,
                           struct listeners *ls)
{
    for (int i = 0; i < ls->n; i++) {
        struct acceptor a;
        memset(&a, 0, sizeof a);
        fut_future_init(&a.base, &acceptor_vt);
        a.srv = srv;
        a.listener = ls->io[i];
        int r = fut_spawn(rt, &a, sizeof a, &ls->acc[i]);
        if (r < 0) {
            fprintf(stderr, "fut-redis: spawn: %s\n", fut_strerror(r));
            return -1;
        }
        ls->spawned = i + 1;
    }
    return 0;
}

/* Stops accepting: drops the acceptors (which close their listeners)
 * and closes the listeners no acceptor took. */
static void close_listeners(struct server *srv, struct listeners *ls)
{
    for (int i = 0; i < ls->n; i++) {
        if (i < ls->spawned)
            fut_drop(&ls->acc[i].base);
        else
            fut_io_close(ls->io[i]);
    }
    ls->n = ls->spawned = 0;
    if (srv->cfg.unixsocket)
        unlink(srv->cfg.unixsocket);
}

/* ------------------------------------------------------------ the server */

/* The server as a future (server.h): opens the listeners and spawns the
 * acceptors and the cron task at its first poll, waits for the signal
 * (or the stop token), then shuts down gracefully. */
static int server_task_poll(struct fut_future *f, struct fut_context *cx)
{
    struct server_task *t = (struct server_task *)f;
    struct listeners *ls = &t->ls;
    struct server *srv = t->srv;
    FUT_BEGIN(f);
    srv->start_ns = fut_time_now();
    srv->backend = fut_runtime_backend(t->rt);
    if (listen_all(srv, ls) != 0 || spawn_acceptors(srv, t->rt, ls) != 0) {
        t->result = 1;
        FUT_RETURN(f);
    }
    {
        struct cron k;
        memset(&k, 0, sizeof k);
        fut_future_init(&k.base, &cron_vt);
        k.srv = srv;
        if (fut_spawn(t->rt, &k, sizeof k, NULL) != 0) {
            t->result = 1;
            FUT_RETURN(f);
        }
    }
    fprintf(stderr, "fut-redis: ready to accept connections\n");
    if (t->sig) {
        fut_signal_recv_init(&t->rx, t->sig);
        FUT_AWAIT(f, &t->rx);
        fprintf(stderr, "fut-redis: signal %d: shutting down\n", t->rx.signo);
    } else {
        fut_token_wait_init(&t->tw, t->stop);
        FUT_AWAIT(f, &t->tw);
        fprintf(stderr, "fut-redis: stopped: shutting down\n");
    }
    atomic_store(&srv->shutting, 1); /* seq_cst: the handshake */
    close_listeners(srv, ls);
    t->deadline = fut_time_now() + GRACE_NS;
    while (atomic_load(&srv->busy) > 0 && fut_time_now() < t->deadline) {
        fut_sleep_init(&t->pause, NS_PER_MS);
        FUT_AWAIT(f, &t->pause);
    }
    FUT_END(f);
}

static void server_task_cleanup(struct fut_future *f)
{
    struct server_task *t = (struct server_task *)f;
    close_listeners(t->srv, &t->ls);
}
FUT_ASYNC_VTABLE(server_task_vt, "fut_redis_server", server_task_poll,
                 server_task_cleanup);

void server_task_init(struct server_task *t, struct server *srv,
                      struct fut_runtime *rt, struct fut_io *sig,
                      struct fut_token *stop)
{
    memset(t, 0, sizeof *t);
    fut_future_init(&t->base, &server_task_vt);
    t->srv = srv;
    t->rt = rt;
    t->sig = sig;
    t->stop = stop;
}

/* ------------------------------------------------------------------ run */

int server_init(struct server *srv, const struct server_config *cfg)
{
    memset(srv, 0, sizeof *srv);
    srv->cfg = *cfg;
    unsigned shards = 1;
    /* --workers: 16 shards per worker keep two workers from meeting on
     * one shard lock most of the time (db.h). */
    while (cfg->workers && shards < 16u * (unsigned)cfg->workers)
        shards *= 2;
    if (db_init(&srv->db, shards) != 0 || pubsub_init(srv) != 0) {
        server_fini(srv);
        return -1;
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    srv->unix_ms0 = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / NS_PER_MS;
    return 0;
}

void server_fini(struct server *srv)
{
    db_fini(&srv->db);
    pubsub_fini(srv);
}

int server_run(struct server *srv, struct fut_runtime *rt, struct fut_io *sig)
{
    struct server_task t;
    server_task_init(&t, srv, rt, sig, NULL);
    int r = fut_block_on(rt, &t.base);
    fut_drop(&t.base);
    return r == 0 ? t.result : 1;
}
