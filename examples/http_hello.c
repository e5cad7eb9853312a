/* http_hello: an HTTP/1.1 keep-alive server answering "hello" (the
 * http_wrk benchmark's server).
 *
 *   http_hello [--workers N] [--host ADDR] PORT
 *
 * Every request gets "200 OK" with the body "hello". The request line
 * (METHOD SP TARGET SP HTTP/1.x) and each header line are parsed; a
 * malformed request gets "400 Bad Request" and the connection is closed.
 * Limits: a request head (line + headers) of at most 8 KiB (else 431 and
 * close); a connection idle for 10 s is closed. Pipelined requests are
 * answered in order, every batch of responses written as soon as it is
 * produced. PORT 0 picks a free port (the "listening on" line names it).
 * Request bodies (Content-Length) are skipped; chunked bodies get 501.
 * "Connection: close" and HTTP/1.0 without keep-alive close after the
 * response. SIGINT/SIGTERM: stop accepting, let open connections finish
 * for up to 5 s, exit 0. SIGUSR1: print the await tree of every task (the
 * task dump, fut_runtime_dump) on stderr.
 */
#include <ctype.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "fut.h"

#define HEAD_MAX 8192
#define OUT_MAX 16384
#define IDLE_NS (10LL * 1000 * 1000 * 1000)
#define GRACE_NS (5LL * 1000 * 1000 * 1000)
#define POLL_NS (10LL * 1000 * 1000)
#define DUMP_BYTES (256 * 1024)

static atomic_long live;

static const char OK[] = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n"
                         "Content-Type: text/plain\r\n\r\nhello";
static const char BAD[] = "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n"
                          "Connection: close\r\n\r\n";
static const char BIG[] = "HTTP/1.1 431 Request Header Fields Too Large\r\n"
                          "Content-Length: 0\r\nConnection: close\r\n\r\n";
static const char CHUNKED[] = "HTTP/1.1 501 Not Implemented\r\n"
                              "Content-Length: 0\r\nConnection: close\r\n\r\n";

/* ---------------------------------------------------------------- parser */

enum verdict { NEED_MORE, GOT_ONE, REJECT };

struct request {
    size_t head_len;   /* bytes of the head, including the blank line */
    size_t body_len;   /* Content-Length */
    int close;         /* close after the response */
    const char *reply; /* what to answer */
    size_t reply_len;
};

static int is_token(char c)
{
    return c > 32 && c < 127 && !strchr("()<>@,;:\\\"/[]?={}", c);
}

/* Parses "METHOD SP TARGET SP HTTP/1.x"; returns the minor version or -1. */
static int parse_request_line(const char *p, size_t n)
{
    size_t i = 0;
    while (i < n && is_token(p[i]))
        i++;
    if (i == 0 || i >= n || p[i] != ' ')
        return -1;
    size_t t = ++i;
    while (i < n && p[i] > 32 && p[i] < 127)
        i++;
    if (i == t || i >= n || p[i] != ' ')
        return -1;
    i++;
    if (n - i != 8 || memcmp(p + i, "HTTP/1.", 7) != 0 ||
        (p[i + 7] != '0' && p[i + 7] != '1'))
        return -1;
    return p[i + 7] - '0';
}

static int header_is(const char *p, size_t n, const char *name)
{
    size_t k = strlen(name);
    return n >= k && strncasecmp(p, name, k) == 0;
}

/* Looks at one header line "Name: value" (without CRLF). 0 or -1. */
static int parse_header(const char *p, size_t n, struct request *rq,
                        int *keepalive)
{
    size_t i = 0;
    while (i < n && is_token(p[i]))
        i++;
    if (i == 0 || i >= n || p[i] != ':')
        return -1;
    const char *v = p + i + 1;
    size_t vn = n - i - 1;
    while (vn && (*v == ' ' || *v == '\t'))
        v++, vn--;
    if (header_is(p, i, "content-length") && i == 14) {
        char tmp[24];
        if (vn == 0 || vn >= sizeof tmp)
            return -1;
        memcpy(tmp, v, vn);
        tmp[vn] = 0;
        char *end;
        unsigned long long len = strtoull(tmp, &end, 10);
        if (*end || !isdigit((unsigned char)tmp[0]) || len > (1u << 30))
            return -1;
        rq->body_len = (size_t)len;
    } else if (header_is(p, i, "transfer-encoding") && i == 17) {
        rq->reply = CHUNKED;
        rq->reply_len = sizeof CHUNKED - 1;
        rq->close = 1;
    } else if (header_is(p, i, "connection") && i == 10) {
        if (vn >= 5 && strncasecmp(v, "close", 5) == 0)
            rq->close = 1;
        else if (vn >= 10 && strncasecmp(v, "keep-alive", 10) == 0)
            *keepalive = 1;
    }
    return 0;
}

/* Parses the request head at the start of 'p' (n bytes). */
static enum verdict parse(const char *p, size_t n, struct request *rq)
{
    memset(rq, 0, sizeof *rq);
    const char *end = NULL;
    for (size_t i = 0; i + 3 < n; i++)
        if (p[i] == '\r' && p[i + 1] == '\n' && p[i + 2] == '\r' &&
            p[i + 3] == '\n') {
            end = p + i;
            break;
        }
    if (!end)
        return n >= HEAD_MAX ? REJECT : NEED_MORE;
    rq->head_len = (size_t)(end - p) + 4;
    if (rq->head_len > HEAD_MAX)
        return REJECT;
    const char *line = p;
    const char *eol = memchr(line, '\r', (size_t)(end - line) + 1);
    int minor = parse_request_line(line, (size_t)(eol - line));
    if (minor < 0 || eol[1] != '\n')
        goto bad;
    int keepalive = 0;
    for (line = eol + 2; line < end; line = eol + 2) {
        eol = memchr(line, '\r', (size_t)(end - line) + 1);
        if (eol[1] != '\n' ||
            parse_header(line, (size_t)(eol - line), rq, &keepalive) < 0)
            goto bad;
    }
    if (minor == 0 && !keepalive)
        rq->close = 1;
    if (!rq->reply) {
        rq->reply = OK;
        rq->reply_len = sizeof OK - 1;
    }
    return GOT_ONE;
bad:
    rq->reply = BAD;
    rq->reply_len = sizeof BAD - 1;
    rq->close = 1;
    return GOT_ONE;
}

/* ------------------------------------------------------------ connection */

struct conn {
    struct fut_future base;
    struct fut_io *io;
    struct fut_io_read rd;
    struct fut_timeout idle;
    struct fut_io_write_all wr;
    size_t in_len, skip, out_len;
    int closing;
    char in[HEAD_MAX + 4096];
    char out[OUT_MAX];
};

/* Answers every complete request in 'in'; returns 0 to go on. */
static void handle(struct conn *c)
{
    size_t pos = 0;
    while (!c->closing) {
        if (c->skip) { /* a body still to skip */
            size_t k = c->in_len - pos < c->skip ? c->in_len - pos : c->skip;
            pos += k;
            c->skip -= k;
            if (c->skip)
                break;
        }
        struct request rq;
        enum verdict v = parse(c->in + pos, c->in_len - pos, &rq);
        if (v == NEED_MORE)
            break;
        if (v == REJECT) {
            memcpy(c->out + c->out_len, BIG, sizeof BIG - 1);
            c->out_len += sizeof BIG - 1;
            c->closing = 1;
            break;
        }
        if (c->out_len + rq.reply_len > OUT_MAX)
            break; /* answer these first; the rest after the write */
        memcpy(c->out + c->out_len, rq.reply, rq.reply_len);
        c->out_len += rq.reply_len;
        pos += rq.head_len;
        c->skip = rq.body_len;
        c->closing = rq.close;
    }
    memmove(c->in, c->in + pos, c->in_len - pos);
    c->in_len -= pos;
}

static int conn_poll(struct fut_future *f, struct fut_context *cx)
{
    struct conn *c = (struct conn *)f;
    FUT_BEGIN(f);
    while (!c->closing) {
        fut_io_read_init(&c->rd, c->io, c->in + c->in_len,
                         sizeof c->in - c->in_len);
        fut_timeout_init(&c->idle, &c->rd.base, fut_time_now() + IDLE_NS);
        FUT_AWAIT(f, &c->idle);
        if (c->idle.result != 0 || c->rd.result <= 0)
            break; /* idle too long, EOF or error */
        c->in_len += (size_t)c->rd.result;
        /* Write every batch handle() produces before reading again: the
         * requests that did not fit in 'out' are answered now, not when
         * the next read brings more. */
        for (handle(c); c->out_len; handle(c)) {
            fut_io_write_all_init(&c->wr, c->io, c->out, c->out_len);
            FUT_AWAIT(f, &c->wr);
            if (c->wr.result < 0)
                goto done;
            c->out_len = 0;
        }
    }
done:
    FUT_END(f);
}

static void conn_cleanup(struct fut_future *f)
{
    fut_io_close(((struct conn *)f)->io);
    atomic_fetch_sub(&live, 1);
}
FUT_ASYNC_VTABLE(conn_vt, "http_conn", conn_poll, conn_cleanup);

/* ----------------------------------------------------------- accept loop */

struct acceptor {
    struct fut_future base;
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
            fprintf(stderr, "http_hello: accept: %s\n",
                    fut_strerror(a->acc.result));
            break;
        }
        {
            /* The connection struct holds its buffers (28 KiB): build it
             * off the stack; spawn copies it into the task. */
            static _Thread_local struct conn c;
            fut_future_init(&c.base, &conn_vt);
            c.io = a->acc.conn;
            c.in_len = c.skip = c.out_len = 0;
            c.closing = 0;
            fut_tcp_set_nodelay(c.io, 1);
            atomic_fetch_add(&live, 1);
            if (fut_spawn(NULL, &c, sizeof c, NULL) != 0) {
                fut_io_close(c.io);
                atomic_fetch_sub(&live, 1);
            }
        }
    }
    FUT_END(f);
}
FUT_ASYNC_VTABLE(acceptor_vt, "acceptor", acceptor_poll, NULL);

/* ------------------------------------------------------------ task dump */

/* SIGUSR1: prints the await tree of every task on stderr. Runs until the
 * server drops it at shutdown. */
struct dumper {
    struct fut_future base;
    struct fut_io *sig;
    struct fut_signal_recv rx;
};

static int dumper_poll(struct fut_future *f, struct fut_context *cx)
{
    struct dumper *d = (struct dumper *)f;
    FUT_BEGIN(f);
    for (;;) {
        fut_signal_recv_init(&d->rx, d->sig);
        FUT_AWAIT(f, &d->rx);
        if (d->rx.result < 0)
            break;
        {
            char *buf = malloc(DUMP_BYTES);
            if (buf) {
                long n = fut_runtime_dump(NULL, buf, DUMP_BYTES);
                if (n >= 0)
                    fprintf(stderr, "%s%s", buf,
                            n >= DUMP_BYTES ? "...(truncated)\n" : "");
                free(buf);
            }
        }
    }
    FUT_END(f);
}
FUT_ASYNC_VTABLE(dumper_vt, "sigusr1_dumper", dumper_poll, NULL);

/* ------------------------------------------------------------------ main */

struct server {
    struct fut_future base;
    struct fut_io *sig;
    struct fut_io *listener;
    struct fut_join acceptor;
    struct fut_join dumper;
    struct fut_signal_recv rx;
    struct fut_sleep pause;
    int64_t deadline;
};

static int server_poll(struct fut_future *f, struct fut_context *cx)
{
    struct server *s = (struct server *)f;
    FUT_BEGIN(f);
    fut_signal_recv_init(&s->rx, s->sig);
    FUT_AWAIT(f, &s->rx);
    fprintf(stderr, "http_hello: signal %d: shutting down\n", s->rx.signo);
    fut_drop(&s->acceptor.base);
    fut_drop(&s->dumper.base);
    fut_io_close(s->listener);
    s->listener = NULL;
    s->deadline = fut_time_now() + GRACE_NS;
    while (atomic_load(&live) > 0 && fut_time_now() < s->deadline) {
        fut_sleep_init(&s->pause, POLL_NS);
        FUT_AWAIT(f, &s->pause);
    }
    FUT_END(f);
}
FUT_ASYNC_VTABLE(server_vt, "server", server_poll, NULL);

static int usage(void)
{
    fprintf(stderr, "usage: http_hello [--workers N] [--host ADDR] PORT\n");
    return 2;
}

int main(int argc, char **argv)
{
    int workers = 0, port = -1;
    const char *host = "127.0.0.1";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--workers") && i + 1 < argc)
            workers = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--host") && i + 1 < argc)
            host = argv[++i];
        else if (i == argc - 1)
            port = atoi(argv[i]);
        else
            return usage();
    }
    if (port < 0 || port > 65535 || workers < 0)
        return usage();
    int sigs[2] = {SIGINT, SIGTERM}, usr1 = SIGUSR1;
    struct server srv;
    memset(&srv, 0, sizeof srv);
    /* Signals first: threads started later inherit the blocked mask. */
    struct dumper d;
    fut_future_init(&d.base, &dumper_vt);
    int r = fut_signal_open(sigs, 2, &srv.sig);
    if (r == 0)
        r = fut_signal_open(&usr1, 1, &d.sig);
    if (r < 0) {
        fprintf(stderr, "http_hello: signals: %s\n", fut_strerror(r));
        return 1;
    }
    struct sockaddr_storage ss;
    socklen_t len;
    if (fut_addr_parse(host, port, &ss, &len) != 0)
        return usage();
    r = fut_tcp_listen((struct sockaddr *)&ss, len, 4096, &srv.listener);
    if (r < 0) {
        fprintf(stderr, "http_hello: listen %s:%d: %s\n", host, port,
                fut_strerror(r));
        return 1;
    }
    struct fut_rt_config cfg;
    fut_rt_config_init(&cfg);
    if (workers > 0) {
        cfg.flavor = FUT_RT_MULTI_THREAD;
        cfg.workers = workers;
    }
    struct fut_runtime *rt;
    r = fut_runtime_new(&cfg, &rt);
    if (r < 0) {
        fprintf(stderr, "http_hello: runtime: %s\n", fut_strerror(r));
        /* 77: this build lacks the flavor (bench/run.sh skips) */
        return r == FUT_EINVAL && workers > 0 ? 77 : 1;
    }
    struct acceptor a;
    fut_future_init(&a.base, &acceptor_vt);
    a.listener = srv.listener;
    r = fut_spawn(rt, &a, sizeof a, &srv.acceptor);
    if (r < 0) {
        fprintf(stderr, "http_hello: spawn: %s\n", fut_strerror(r));
        return 1;
    }
    r = fut_spawn(rt, &d, sizeof d, &srv.dumper);
    if (r < 0) {
        fprintf(stderr, "http_hello: SIGUSR1 dump: %s\n", fut_strerror(r));
        return 1;
    }
    if (fut_io_local_addr(srv.listener, &ss, &len) == 0)
        port = fut_addr_port(&ss); /* the one port 0 picked */
    fprintf(stderr, "http_hello: listening on %s:%d (%s)\n", host, port,
            workers ? "multi-thread" : "current-thread");
    fut_future_init(&srv.base, &server_vt);
    fut_block_on(rt, &srv.base);
    fut_drop(&srv.base);
    fut_runtime_free(rt);
    if (srv.listener)
        fut_io_close(srv.listener);
    fut_io_close(srv.sig);
    fut_io_close(d.sig);
    return 0;
}
