/* SPDX-License-Identifier: MIT */
/* http_hello: an HTTP/1.1 keep-alive server answering "hello", small
 * enough to read in one sitting and careful enough to put on a network
 * (it is also the http_wrk benchmark's server).
 *
 * What it shows: one task per connection written as an async function
 * (FUT_BEGIN / FUT_AWAIT), every read and write under a deadline (one
 * sleep per connection, moved with fut_sleep_reset: struct bounded),
 * memory taken only while a request is in flight, and a graceful
 * shutdown on a signal (fut_signal_open).
 *
 * Run it:
 *   ./build/examples/http_hello 8080             current-thread runtime
 *   ./build/examples/http_hello --workers 2 8080 multi-thread, 2 workers
 *   curl http://127.0.0.1:8080/
 *   wrk -c50 -d5s http://127.0.0.1:8080/
 * Options: [--workers N] [--host ADDR] [--header-timeout S]
 * [--keepalive-timeout S] [--body-timeout S] [--send-timeout S] PORT
 * (seconds, fractions allowed; the limits table below says what each
 * bounds). PORT 0 picks a free port; the "listening on" line on stderr
 * names it.
 *
 * Behaviour: GET gets "200 OK" with the body "hello", HEAD the same
 * head without the body; so do POST, PUT, DELETE, OPTIONS and PATCH.
 * Lines end in CRLF or a bare LF (RFC 9112 2.2); empty lines before a
 * request line are skipped. The request line (METHOD SP TARGET SP
 * HTTP/1.x) and every header line are checked; a malformed head gets
 * 400, an HTTP/1.1 request without Host or with two Host headers 400
 * (RFC 9112 3.2), a head over HEAD_MAX 431, a body over BODY_MAX 413, a
 * chunked body 501, any other method 501 (RFC 9110 9.1: methods are
 * case-sensitive, so "get" too; CONNECT and TRACE are not done here) -
 * each followed by a close. Bodies (Content-Length) are skipped. Pipelined
 * requests are answered in order, every batch of replies written as soon
 * as it is produced. "Connection: close", and HTTP/1.0 without
 * "Connection: keep-alive", close after the reply. A head not complete by
 * its deadline gets 408 and a close; an idle keep-alive connection is
 * closed at its deadline. SIGINT/SIGTERM: stop accepting, let open
 * connections finish for up to GRACE_NS, exit 0. SIGUSR1: print the await
 * tree of every task (fut_runtime_dump) on stderr.
 */
#include <ctype.h>
#include <pthread.h>
#include <stddef.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cmdline.h"
#include "fut.h"

/* ---------------------------------------------------------------- limits */

/* Every limit the server enforces, in one place. Beside each: nginx's
 * default for the same thing (where nginx counts differently, the
 * comment says how). Sizes are fixed at build time; times are options. */
#define SMALL_IN                                                             \
    1024 /* bytes: an idle connection's read buffer;
                                 nginx client_header_buffer_size 1k */
#define HEAD_MAX                                                             \
    8192                         /* bytes: request line + headers, else 431;
                                 nginx large_client_header_buffers 4 8k
                                 (8k a line, 32k a head; nginx says 400
                                 or 414) */
#define IN_MAX (HEAD_MAX + 4096) /* bytes: the in-flight read buffer */
#define OUT_MAX                                                              \
    16384 /* bytes: replies batched into one write;
                                 nginx output_buffers 2 32k */
#define BODY_MAX                                                             \
    (1L << 20) /* bytes: largest body skipped, else 413;
                                 nginx client_max_body_size 1m */
#define LINGER_NS                                                            \
    (2LL * 1000 * 1000 * 1000) /* after an error reply,
                                 input is read and dropped for this long
                                 (see "linger"); nginx lingering_time 30s,
                                 lingering_timeout 5s */
#define BUFS_CACHED                                                          \
    16 /* in-flight buffers a thread keeps for
                                 reuse (see bufs_give); nginx: none, it
                                 frees into its per-connection pool */
#define GRACE_NS                                                             \
    (5LL * 1000 * 1000 * 1000) /* shutdown: time given to
                                 open connections; nginx
                                 worker_shutdown_timeout (none) */

static struct limits {
    /* --header-timeout: a whole request head (first byte to blank line;
     * the first request's from accept) must arrive within it, however
     * it trickles in; then 408 and close. nginx client_header_timeout 60s
     * (also for the whole head: its timer is not re-armed by reads). */
    int64_t header_ns;
    /* --keepalive-timeout: an idle connection (reply written, no byte of
     * the next request yet) is closed after it, silently.
     * nginx keepalive_timeout 75s. */
    int64_t keepalive_ns;
    /* --body-timeout: a whole request body must arrive within it, else
     * close. nginx client_body_timeout 60s (between two reads; ours is
     * for the whole body, which BODY_MAX keeps small). */
    int64_t body_ns;
    /* --send-timeout: a batch of replies (<= OUT_MAX) must be written
     * within it (a client that does not read), else close.
     * nginx send_timeout 60s (between two writes). */
    int64_t send_ns;
} lim = {
    .header_ns = 10LL * 1000 * 1000 * 1000,
    .keepalive_ns = 10LL * 1000 * 1000 * 1000,
    .body_ns = 10LL * 1000 * 1000 * 1000,
    .send_ns = 10LL * 1000 * 1000 * 1000,
};

#define POLL_NS (10LL * 1000 * 1000)
#define DUMP_BYTES (256 * 1024)

static atomic_long live; /* open connections */

/* ---------------------------------------------------------------- parser */

/* One parsed request head. */
struct request {
    size_t head_len; /* bytes of the head, including the blank line */
    size_t body_len; /* Content-Length */
    int status;      /* 200, or the error to answer (then close) */
    int minor;       /* HTTP/1.minor */
    int head;        /* HEAD: no body in the reply */
    int close;       /* close after the reply */
    int keepalive;   /* "Connection: keep-alive" (for HTTP/1.0) */
    int host;        /* a Host header was seen */
    int length;      /* a Content-Length header was seen */
};

/* The class of each byte, a table: these tests run for every byte of
 * every head. TOKEN: tchar (RFC 9110 5.6.2), VCHAR but the delimiters;
 * FIELD: a header value's bytes, VCHAR, obs-text, SP and HTAB (no CR, no
 * CTL). */
enum { TOKEN = 1, FIELD = 2 };
static unsigned char char_class[256];

static void init_char_class(void)
{
    for (int c = 0; c < 256; c++) {
        if (c >= 33 && c < 127 && !strchr("()<>@,;:\\\"/[]?={}", c))
            char_class[c] |= TOKEN;
        if (c >= 32 ? c != 127 : c == '\t')
            char_class[c] |= FIELD;
    }
}

static int is_token(unsigned char c)
{
    return char_class[c] & TOKEN;
}

static int is_field_char(unsigned char c)
{
    return char_class[c] & FIELD;
}

/* The length of the empty lines (CRLF or LF) at the start of 'p'. */
static size_t empty_lines(const char *p, size_t n)
{
    size_t i = 0;
    for (;;) {
        if (i < n && p[i] == '\n')
            i++;
        else if (i + 1 < n && p[i] == '\r' && p[i + 1] == '\n')
            i += 2;
        else
            return i;
    }
}

/* The length of the head at the start of 'p' (up to and including its
 * empty line), or 0 while it is incomplete. A line ends in LF; a CR
 * before the LF is dropped by the line parsers. */
static size_t head_end(const char *p, size_t n)
{
    const char *end = p + n;
    for (const char *q = memchr(p, '\n', n); q;
         q = memchr(q + 1, '\n', (size_t)(end - q - 1))) {
        size_t i = (size_t)(q - p) + 1;
        if (i < n && p[i] == '\n')
            return i + 1;
        if (i + 1 < n && p[i] == '\r' && p[i + 1] == '\n')
            return i + 2;
    }
    return 0;
}

/* Whether 'p' (n bytes, no LF yet) can still become a request line: a
 * client sending garbage gets its 400 at once, not at HEAD_MAX. */
static int request_line_prefix_ok(const char *p, size_t n)
{
    size_t i = 0;
    while (i < n && is_token((unsigned char)p[i]))
        i++;
    if (i == n)
        return 1;
    if (i == 0 || p[i] != ' ')
        return 0;
    size_t t = ++i;
    while (i < n && p[i] > 32 && p[i] < 127)
        i++;
    if (i == n)
        return 1;
    if (i == t || p[i] != ' ')
        return 0;
    const char *v = p + i + 1; /* the version so far */
    size_t k = n - i - 1;
    if (k > 9 || memcmp(v, "HTTP/1.", k < 7 ? k : 7) != 0)
        return 0;
    if (k >= 8 && v[7] != '0' && v[7] != '1')
        return 0;
    return k < 9 || v[8] == '\r';
}

/* The methods answered 200 (see the opening comment); any other gets
 * 501. Case-sensitive (RFC 9110 9.1). */
static int method_known(const char *p, size_t n)
{
    static const char *const known[] = {"GET",    "HEAD",    "POST", "PUT",
                                        "DELETE", "OPTIONS", "PATCH"};
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (n == strlen(known[i]) && memcmp(p, known[i], n) == 0)
            return 1;
    return 0;
}

/* "METHOD SP TARGET SP HTTP/1.x" (the line without its LF and CR):
 * 0 or -1; a method not known sets status 501. */
static int parse_request_line(const char *p, size_t n, struct request *rq)
{
    size_t i = 0;
    while (i < n && is_token((unsigned char)p[i]))
        i++;
    if (i == 0 || i >= n || p[i] != ' ')
        return -1;
    rq->head = i == 4 && memcmp(p, "HEAD", 4) == 0;
    if (!method_known(p, i))
        rq->status = 501;
    size_t t = ++i;
    while (i < n && p[i] > 32 && p[i] < 127)
        i++;
    if (i == t || i >= n || p[i] != ' ')
        return -1;
    i++;
    if (n - i != 8 || memcmp(p + i, "HTTP/1.", 7) != 0 ||
        (p[i + 7] != '0' && p[i + 7] != '1'))
        return -1;
    rq->minor = p[i + 7] - '0';
    return 0;
}

static int name_is(const char *p, size_t n, const char *name)
{
    return n == strlen(name) && strncasecmp(p, name, n) == 0;
}

/* Reads a Content-Length value: 0 or -1 (not a number, or a second
 * one). Its size is judged by the caller (413). */
static int parse_length(const char *v, size_t vn, struct request *rq)
{
    if (rq->length || vn == 0 || vn > 18)
        return -1;
    size_t len = 0;
    for (size_t i = 0; i < vn; i++) {
        if (!isdigit((unsigned char)v[i]))
            return -1;
        len = len * 10 + (size_t)(v[i] - '0');
    }
    rq->length = 1;
    rq->body_len = len;
    return 0;
}

/* One header line "Name: value" (without LF and CR): 0 or -1. */
static int parse_header(const char *p, size_t n, struct request *rq)
{
    size_t i = 0;
    while (i < n && is_token((unsigned char)p[i]))
        i++;
    if (i == 0 || i >= n || p[i] != ':')
        return -1; /* also obs-fold and space before the colon (400) */
    const char *v = p + i + 1;
    size_t vn = n - i - 1;
    for (size_t k = 0; k < vn; k++)
        if (!is_field_char((unsigned char)v[k]))
            return -1;
    while (vn && (*v == ' ' || *v == '\t'))
        v++, vn--;
    while (vn && (v[vn - 1] == ' ' || v[vn - 1] == '\t'))
        vn--;
    if (name_is(p, i, "content-length"))
        return parse_length(v, vn, rq);
    if (name_is(p, i, "transfer-encoding"))
        rq->status = 501;
    else if (name_is(p, i, "host")) {
        if (rq->host)
            return -1; /* a second Host: 400 (RFC 9112 3.2) */
        rq->host = 1;
    } else if (name_is(p, i, "connection")) {
        if (vn >= 5 && strncasecmp(v, "close", 5) == 0)
            rq->close = 1;
        else if (vn >= 10 && strncasecmp(v, "keep-alive", 10) == 0)
            rq->keepalive = 1;
    }
    return 0;
}

/* Parses each line of the head 'p' (n bytes, its empty line excluded),
 * without its LF and CR: the request line, then the headers. A bare CR
 * inside a line fails it. 0 or -1. */
static int each_line(const char *p, size_t n, struct request *rq)
{
    int first = 1;
    while (n) {
        const char *lf = memchr(p, '\n', n);
        size_t len = (size_t)(lf - p), next = len + 1;
        if (len && p[len - 1] == '\r')
            len--;
        if (memchr(p, '\r', len))
            return -1;
        int r =
            first ? parse_request_line(p, len, rq) : parse_header(p, len, rq);
        if (r < 0)
            return -1;
        first = 0;
        p += next;
        n -= next;
    }
    return 0;
}

/* Whether the bytes of an incomplete head can still become a request:
 * a complete request line must be valid, an incomplete one a prefix of
 * one. A client sending garbage gets its 400 at once. */
static int head_ok_so_far(const char *p, size_t n)
{
    const char *lf = memchr(p, '\n', n);
    if (!lf)
        return request_line_prefix_ok(p, n);
    size_t len = (size_t)(lf - p);
    if (len && p[len - 1] == '\r')
        len--;
    struct request rq;
    return !memchr(p, '\r', len) && parse_request_line(p, len, &rq) == 0;
}

enum verdict { NEED_MORE, GOT_ONE };

/* Whether the token at 'p' (n bytes) is 'lower' (lowercase letters and
 * '-'), case-insensitively. Folding with | 0x20 is exact here: the only
 * bytes that fold onto a lowercase letter are it and its capital, and
 * onto '-' only '-' and CR, which is not a token byte. */
static int token_is(const char *p, size_t n, const char *lower, size_t ln)
{
    if (n != ln)
        return 0;
    for (size_t k = 0; k < n; k++)
        if (((unsigned char)p[k] | 0x20) != (unsigned char)lower[k])
            return 0;
    return 1;
}

/* The common case in one pass: a complete head whose every line is
 * valid, with a known method, at most one Host, at most one valid
 * Content-Length, no Transfer-Encoding, within HEAD_MAX and BODY_MAX.
 * Returns 1 with '*rq' filled (status 200) exactly as parse()'s checks
 * would fill it, or 0 for anything else - incomplete, any error, any
 * status but 200 - which parse()'s line-by-line checks then decide. So
 * the fast path decides nothing the full checks would decide otherwise
 * (test/example_http.c's cases run through both). */
static int parse_fast(const char *p, size_t n, struct request *rq)
{
    size_t i = 0;
    if (n > HEAD_MAX)
        n = HEAD_MAX; /* a longer head is not for this path */
    while (i < n && is_token((unsigned char)p[i]))
        i++;
    if (i >= n || p[i] != ' ')
        return 0;
    switch (i) { /* method_known's list, by length */
    case 3:
        if (memcmp(p, "GET", 3) && memcmp(p, "PUT", 3))
            return 0;
        break;
    case 4:
        rq->head = memcmp(p, "HEAD", 4) == 0;
        if (!rq->head && memcmp(p, "POST", 4))
            return 0;
        break;
    case 5:
        if (memcmp(p, "PATCH", 5))
            return 0;
        break;
    case 6:
        if (memcmp(p, "DELETE", 6))
            return 0;
        break;
    case 7:
        if (memcmp(p, "OPTIONS", 7))
            return 0;
        break;
    default:
        return 0;
    }
    size_t t = ++i;
    while (i < n && p[i] > 32 && p[i] < 127)
        i++;
    if (i == t || i >= n || p[i] != ' ')
        return 0;
    i++;
    if (n - i < 9 || memcmp(p + i, "HTTP/1.", 7) != 0 ||
        (p[i + 7] != '0' && p[i + 7] != '1'))
        return 0;
    rq->minor = p[i + 7] - '0';
    i += 8;
    if (p[i] == '\r' && i + 1 < n && p[i + 1] == '\n')
        i += 2;
    else if (p[i] == '\n')
        i++;
    else
        return 0; /* a bare CR, more bytes, or incomplete */
    for (;;) {    /* at the start of a header line, or of the empty line */
        if (i >= n)
            return 0;
        if (p[i] == '\n' || p[i] == '\r') {
            if (p[i] == '\n')
                i++;
            else if (i + 1 < n && p[i + 1] == '\n')
                i += 2;
            else
                return 0;
            break;
        }
        size_t name = i;
        while (i < n && is_token((unsigned char)p[i]))
            i++;
        if (i == name || i >= n || p[i] != ':')
            return 0;
        size_t nn = i - name;
        size_t v = ++i;
        while (i < n && is_field_char((unsigned char)p[i]))
            i++;
        if (i >= n)
            return 0;
        size_t ve = i;
        if (p[i] == '\r' && i + 1 < n && p[i + 1] == '\n')
            i += 2;
        else if (p[i] == '\n')
            i++;
        else
            return 0;
        while (v < ve && (p[v] == ' ' || p[v] == '\t'))
            v++;
        while (ve > v && (p[ve - 1] == ' ' || p[ve - 1] == '\t'))
            ve--;
        const char *name_p = p + name;
        if (token_is(name_p, nn, "host", 4)) {
            if (rq->host)
                return 0;
            rq->host = 1;
        } else if (token_is(name_p, nn, "content-length", 14)) {
            if (parse_length(p + v, ve - v, rq) < 0)
                return 0;
        } else if (token_is(name_p, nn, "transfer-encoding", 17)) {
            return 0;
        } else if (token_is(name_p, nn, "connection", 10)) {
            if (ve - v >= 5 && strncasecmp(p + v, "close", 5) == 0)
                rq->close = 1;
            else if (ve - v >= 10 &&
                     strncasecmp(p + v, "keep-alive", 10) == 0)
                rq->keepalive = 1;
        }
    }
    if ((rq->minor == 1 && !rq->host) || rq->body_len > (size_t)BODY_MAX)
        return 0;
    rq->head_len = i;
    if (rq->minor == 0 && !rq->keepalive)
        rq->close = 1;
    return 1;
}

/* Parses the request head at the start of 'p' (n bytes, not starting
 * with an empty line). GOT_ONE: '*rq' says what to answer; rq->status
 * other than 200 means "answer that and close". */
static enum verdict parse(const char *p, size_t n, struct request *rq)
{
    memset(rq, 0, sizeof *rq);
    rq->status = 200;
    if (parse_fast(p, n, rq))
        return GOT_ONE;
    memset(rq, 0, sizeof *rq); /* the fast path's partial fill */
    rq->status = 200;
    size_t len = head_end(p, n);
    if (len == 0 || len > HEAD_MAX) {
        if (!head_ok_so_far(p, len ? len : n))
            rq->status = 400;
        else if (len || n >= HEAD_MAX)
            rq->status = 431;
        else
            return NEED_MORE;
        rq->close = 1;
        return GOT_ONE;
    }
    rq->head_len = len;
    size_t blank = p[len - 2] == '\r' ? 2 : 1;
    if (each_line(p, len - blank, rq) < 0 || (rq->minor == 1 && !rq->host))
        rq->status = 400;
    else if (rq->status == 200 && rq->body_len > (size_t)BODY_MAX)
        rq->status = 413;
    if (rq->status != 200 || (rq->minor == 0 && !rq->keepalive))
        rq->close = 1;
    return GOT_ONE;
}

/* ------------------------------------------------------------ connection */

/* One connection is one task running conn_poll. Its rules:
 *
 *   - Phases and their deadline ('deadline', absolute; each read waits
 *     under it, so no read can extend it):
 *       HEAD  bytes of a request head may be buffered; deadline = the
 *             head's first byte (the first request: accept) + header_ns;
 *             expiry: 408 if a byte came, then close;
 *       BODY  skipping a body; deadline = end of its head + body_ns;
 *       IDLE  every reply written, nothing buffered; deadline = the last
 *             write + keepalive_ns; expiry: silent close. A byte arriving
 *             starts a HEAD.
 *     Each write (a batch of replies) has its own deadline, send_ns.
 *   - The clock is read only when a deadline can matter: a HEAD or IDLE
 *     phase starts with 'deadline' 0 ("not taken yet"), and the read that
 *     first has to wait in it takes now + its span. Nothing waits between
 *     the start of such a phase and that read (only handle() runs), so it
 *     is the same moment up to microseconds - and a request that arrives
 *     whole and is answered without waiting costs no clock read for its
 *     head. A write takes now + send_ns only if it has to wait.
 *   - Every deadline is kept by one sleep per connection ('timer'), moved
 *     with fut_sleep_reset: a deadline later than the one it is armed for
 *     is only stored (no timer operation per request; see fut/time.h),
 *     an earlier one re-files it.
 *   - Buffers: 'b' (the in-flight buffers, IN_MAX + OUT_MAX) is taken
 *     when bytes arrive on an idle connection and given back when the
 *     connection is idle again, so an idle connection holds only this
 *     struct (its SMALL_IN read buffer included). While 'b' is NULL,
 *     in_len is 0 and reads land in 'small', then move to b->in.
 *   - Every batch of replies handle() produces is written before the next
 *     read: requests pipelined in one read are answered in as many writes
 *     as OUT_MAX takes, none waits for more input.
 */
enum phase { PH_HEAD, PH_BODY, PH_IDLE, PH_NEXT /* a request ended */ };

/* A read or a write under a deadline kept by the connection's 'timer'
 * (a fut_timeout per read and write armed and cancelled a timer each
 * time: ~400 instructions per request, callgrind). Each poll polls inner
 * first; when it is PENDING for the first time, '*deadline' (0: now +
 * 'span', stored back) becomes the timer's deadline (fut_sleep_reset),
 * and once the timer is READY inner is dropped where it stood and the
 * result is FUT_ETIMEDOUT. Output: 'result' = 0 (inner READY) or
 * FUT_ETIMEDOUT. Owns inner's drop, like fut_timeout. */
struct bounded {
    struct fut_future base;
    struct fut_future *inner; /* caller storage; NULL once dropped */
    struct fut_sleep *timer;  /* the connection's */
    int64_t *deadline;        /* absolute, or 0: take now + span */
    int64_t span;
    int waited; /* the timer carries this operation's deadline */
    int result; /* output */
};
struct bufs {
    struct bufs *next; /* in a thread's cache */
    char out[OUT_MAX];
    char in[IN_MAX];
};

/* Buffers given back go to a cache of the thread (a worker reuses what
 * its connections gave back) rather than to free(): with one request per
 * read, a malloc and a free of 28 KiB were ~220 of the ~2,950
 * instructions a request took in user space (callgrind). The cache holds
 * BUFS_CACHED at most, so it is a fixed cost per thread, not per
 * connection; 'cache_key' empties it when a worker thread exits. */
static _Thread_local struct bufs *cache;
static _Thread_local int ncached;
static _Thread_local int armed; /* cache_key's destructor, for this thread */
static pthread_key_t cache_key;

static struct bufs *bufs_take(void)
{
    struct bufs *b = cache;
    if (!b)
        return malloc(sizeof *b);
    cache = b->next;
    ncached--;
    return b;
}

static void bufs_give(struct bufs *b)
{
    if (ncached == BUFS_CACHED) {
        free(b);
        return;
    }
    if (!armed) /* once per thread: 35 instructions a call */
        armed = pthread_setspecific(cache_key, &cache) == 0;
    b->next = cache;
    cache = b;
    ncached++;
}

/* Empties this thread's cache (at thread exit, and at the end of main). */
static void bufs_flush(void *unused)
{
    (void)unused;
    while (cache) {
        struct bufs *b = cache;
        cache = b->next;
        free(b);
    }
    ncached = 0;
}

struct conn {
    struct fut_future base;
    struct fut_io *io;
    struct bufs *b;        /* in-flight buffers, NULL while idle */
    char *in;              /* b->in, or 'small' while b is NULL */
    size_t in_len;         /* bytes buffered in 'in' */
    size_t out_len;        /* bytes of replies in b->out */
    size_t skip;           /* body bytes still to skip */
    int64_t deadline;      /* of the phase, or 0: not taken (see the rules) */
    int64_t send_deadline; /* of the write in flight, or 0: not taken */
    enum phase phase;
    int closing;            /* close once 'out' is written */
    int error;              /* an error reply was given (then linger) */
    struct fut_sleep timer; /* every deadline (see the rules) */
    struct bounded io_dl;   /* rd or wr, under the deadline */
    struct fut_io_read rd;
    struct fut_io_write_all wr;
    char small[SMALL_IN]; /* where an idle connection reads */
};

#define REPLY_MAX 160 /* bytes of the longest reply below */

static void put(struct conn *c, const char *s, size_t n)
{
    memcpy(c->b->out + c->out_len, s, n);
    c->out_len += n;
}
#define PUT(c, lit) put((c), (lit), sizeof(lit) - 1)

static const char *status_text(int status)
{
    switch (status) {
    case 400:
        return "400 Bad Request";
    case 408:
        return "408 Request Timeout";
    case 413:
        return "413 Content Too Large";
    case 431:
        return "431 Request Header Fields Too Large";
    default:
        return "501 Not Implemented";
    }
}

/* Appends the reply to 'rq' to the output. */
static void answer(struct conn *c, const struct request *rq)
{
    if (rq->status != 200) {
        PUT(c, "HTTP/1.1 ");
        const char *s = status_text(rq->status);
        put(c, s, strlen(s));
        PUT(c, "\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        c->closing = c->error = 1;
        return;
    }
    if (!rq->close && rq->minor == 1 && !rq->head) { /* the usual: one copy */
        PUT(c, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n"
               "Content-Type: text/plain\r\n\r\nhello");
        c->closing = 0;
        return;
    }
    PUT(c, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n"
           "Content-Type: text/plain\r\n");
    if (rq->close)
        PUT(c, "Connection: close\r\n");
    else if (rq->minor == 0)
        PUT(c, "Connection: keep-alive\r\n");
    PUT(c, "\r\n");
    if (!rq->head)
        PUT(c, "hello");
    c->closing = rq->close;
}

/* Answers every complete request buffered in 'in', while the output has
 * room, and drops what it consumed. */
static void handle(struct conn *c)
{
    size_t pos = 0;
    while (!c->closing && c->out_len + REPLY_MAX <= OUT_MAX) {
        if (c->skip) { /* a body still to skip */
            size_t k = c->in_len - pos < c->skip ? c->in_len - pos : c->skip;
            pos += k;
            c->skip -= k;
            if (c->skip)
                break;
            c->phase = PH_NEXT;
        }
        pos += empty_lines(c->in + pos, c->in_len - pos);
        if (pos == c->in_len)
            break;
        struct request rq;
        if (parse(c->in + pos, c->in_len - pos, &rq) == NEED_MORE)
            break;
        answer(c, &rq);
        pos += rq.head_len;
        c->skip = rq.body_len;
        c->phase = c->skip ? PH_BODY : PH_NEXT;
        if (c->skip) /* (read now: a write may come before the body) */
            c->deadline = fut_time_now() + lim.body_ns;
    }
    if (pos < c->in_len) /* a partial request stays */
        memmove(c->in, c->in + pos, c->in_len - pos);
    c->in_len -= pos;
}

/* 'n' bytes were read into 'in': takes the buffers if the connection was
 * idle. Returns 0, or -1 when there is no memory (then close). */
static int got_bytes(struct conn *c, size_t n)
{
    if (!c->b) {
        c->b = bufs_take();
        if (!c->b)
            return -1;
        memcpy(c->b->in, c->small, n);
        c->in = c->b->in;
    }
    c->in_len += n;
    if (c->phase == PH_IDLE) {
        c->phase = PH_HEAD;
        c->deadline = 0; /* now + header_ns, taken at the first wait */
    }
    return 0;
}

/* Every reply is written: sets the next phase's deadline and gives the
 * buffers back if nothing is buffered. */
static void settle(struct conn *c)
{
    if (c->phase == PH_NEXT) {
        c->phase = c->in_len ? PH_HEAD : PH_IDLE;
        c->deadline = 0; /* taken at the first wait (see the rules) */
    }
    if (c->b && c->in_len == 0 && c->skip == 0) {
        bufs_give(c->b);
        c->b = NULL;
        c->in = c->small;
    }
}

/* The deadline passed: 1 if a 408 is to be written, 0 to close now. */
static int timed_out(struct conn *c)
{
    c->closing = 1;
    if (c->phase != PH_HEAD || c->in_len == 0)
        return 0;
    struct request rq = {.status = 408};
    answer(c, &rq);
    return 1;
}

static int bounded_poll(struct fut_future *f, struct fut_context *cx)
{
    struct bounded *b = (struct bounded *)f;
    if (!b->inner) /* timed out already */
        return FUT_READY;
    if (fut_poll(b->inner, cx) == FUT_READY) {
        b->result = 0;
        return FUT_READY;
    }
    if (!b->waited) {
        if (*b->deadline == 0)
            *b->deadline = fut_time_now() + b->span;
        fut_sleep_reset(b->timer, *b->deadline); /* later: a store */
        b->waited = 1;
    }
    if (fut_poll(&b->timer->base, cx) == FUT_PENDING)
        return FUT_PENDING;
    fut_drop(b->inner);
    b->inner = NULL;
    b->result = FUT_ETIMEDOUT;
    return FUT_READY;
}

static void bounded_drop(struct fut_future *f)
{
    struct bounded *b = (struct bounded *)f;
    if (b->inner)
        fut_drop(b->inner);
    b->inner = NULL;
}

static const struct fut_future_vtable bounded_vt = {
    bounded_poll, bounded_drop, "bounded", NULL};

/* 'inner' under the connection's timer, until '*deadline' (0: now +
 * 'span', taken when inner first waits). */
static void bounded_init(struct conn *c, struct fut_future *inner,
                         int64_t *deadline, int64_t span)
{
    fut_future_init(&c->io_dl.base, &bounded_vt);
    c->io_dl.inner = inner;
    c->io_dl.timer = &c->timer;
    c->io_dl.deadline = deadline;
    c->io_dl.span = span;
    c->io_dl.waited = 0;
    c->io_dl.result = 0;
}

/* A read into 'in' under the phase's deadline. */
static void read_init(struct conn *c)
{
    fut_io_read_init(&c->rd, c->io, c->in + c->in_len,
                     (c->b ? IN_MAX : SMALL_IN) - c->in_len);
    bounded_init(c, &c->rd.base, &c->deadline,
                 c->phase == PH_IDLE ? lim.keepalive_ns : lim.header_ns);
}

static int conn_poll(struct fut_future *f, struct fut_context *cx)
{
    struct conn *c = (struct conn *)f;
    FUT_BEGIN(f);
    c->in = c->small; /* here: the task's copy does not move any more */
    fut_sleep_until_init(&c->timer, -1); /* bounded_poll sets it */
    for (;;) {
        read_init(c);
        FUT_AWAIT(f, &c->io_dl);
        if (c->io_dl.result != 0) {
            if (!timed_out(c))
                break;
        } else if (c->rd.result <= 0 || got_bytes(c, (size_t)c->rd.result))
            break; /* EOF, error, or no memory */
        /* Write every batch handle() produces before reading again. */
        for (handle(c); c->out_len; handle(c)) {
            fut_io_write_all_init(&c->wr, c->io, c->b->out, c->out_len);
            c->send_deadline = 0; /* now + send_ns if it has to wait */
            bounded_init(c, &c->wr.base, &c->send_deadline, lim.send_ns);
            FUT_AWAIT(f, &c->io_dl);
            if (c->io_dl.result != 0 || c->wr.result < 0)
                goto done; /* the client does not read, or went away */
            c->out_len = 0;
            if (c->closing)
                goto linger;
        }
        settle(c);
    }
    goto done;
linger:
    /* Closing with input unread would make the kernel answer it with a
     * reset, which can destroy the reply before the client reads it:
     * send FIN after the reply, then read and drop what still comes,
     * for LINGER_NS at most (nginx's lingering close). */
    if (!c->error && c->in_len == 0 && c->skip == 0)
        goto done;
    fut_io_shutdown(c->io, SHUT_WR);
    c->deadline = fut_time_now() + LINGER_NS;
    do {
        fut_io_read_init(&c->rd, c->io, c->small, SMALL_IN);
        bounded_init(c, &c->rd.base, &c->deadline, 0);
        FUT_AWAIT(f, &c->io_dl);
    } while (c->io_dl.result == 0 && c->rd.result > 0);
done:
    FUT_END(f);
}

static void conn_cleanup(struct fut_future *f)
{
    struct conn *c = (struct conn *)f;
    if (c->timer.base.vt)
        fut_drop(&c->timer.base); /* disarms it */
    if (c->b)
        bufs_give(c->b);
    fut_io_close(c->io);
    atomic_fetch_sub(&live, 1);
}
FUT_ASYNC_VTABLE(conn_vt, "http_conn", conn_poll, conn_cleanup);

/* ----------------------------------------------------------- accept loop */

struct acceptor {
    struct fut_future base;
    struct fut_io *listener;
    struct fut_accept acc;
};

/* Starts a connection's task; the first head's deadline runs from now. */
static void start_conn(struct fut_io *io)
{
    struct conn c;
    memset(&c, 0, offsetof(struct conn, small));
    fut_future_init(&c.base, &conn_vt);
    c.io = io;
    c.phase = PH_HEAD;
    c.deadline = fut_time_now() + lim.header_ns;
    fut_tcp_set_nodelay(io, 1);
    atomic_fetch_add(&live, 1);
    if (fut_spawn(NULL, &c, sizeof c, NULL) != 0) {
        fut_io_close(io);
        atomic_fetch_sub(&live, 1);
    }
}

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
        start_conn(a->acc.conn);
    }
    FUT_END(f);
}
/* The acceptor owns the listener: dropping its join handle only asks for
 * the task to be dropped (at once when idle, else after its current poll
 * or at the next tick), so only the task itself may close the listener,
 * after its accept future is gone (fut_io_close: every future over the
 * handle must have been dropped). */
static void acceptor_cleanup(struct fut_future *f)
{
    fut_io_close(((struct acceptor *)f)->listener);
}
FUT_ASYNC_VTABLE(acceptor_vt, "acceptor", acceptor_poll, acceptor_cleanup);

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
    fut_drop(&s->acceptor.base); /* the task closes the listener */
    fut_drop(&s->dumper.base);
    s->listener = NULL;
    s->deadline = fut_time_now() + GRACE_NS;
    while (atomic_load(&live) > 0 && fut_time_now() < s->deadline) {
        fut_sleep_init(&s->pause, POLL_NS);
        FUT_AWAIT(f, &s->pause);
    }
    FUT_END(f);
}
FUT_ASYNC_VTABLE(server_vt, "server", server_poll, NULL);

static const char usage_text[] =
    "usage: http_hello [--workers N] [--host ADDR] [--header-timeout S] "
    "[--keepalive-timeout S] [--body-timeout S] [--send-timeout S] PORT\n"
    "  An HTTP/1.1 server answering \"Hello, world!\". PORT 0: any free\n"
    "  port (printed).\n"
    "  --workers N        N >= 1: the multi-thread runtime with N workers\n"
    "                     (0, the default: the current-thread runtime)\n"
    "  --host ADDR        the address to listen on (default 127.0.0.1)\n"
    "  --header-timeout S, --keepalive-timeout S, --body-timeout S,\n"
    "  --send-timeout S   the limits, in seconds\n"
    "  -h, --help         this text\n";

/* The options that set a limit (seconds, > 0). */
static const struct {
    const char *name;
    int64_t *ns;
} time_opts[] = {
    {"--header-timeout", &lim.header_ns},
    {"--keepalive-timeout", &lim.keepalive_ns},
    {"--body-timeout", &lim.body_ns},
    {"--send-timeout", &lim.send_ns},
};

/* The limit option named 'name', or NULL. */
static int64_t *time_opt(const char *name)
{
    for (size_t i = 0; i < sizeof time_opts / sizeof time_opts[0]; i++)
        if (!strcmp(name, time_opts[i].name))
            return time_opts[i].ns;
    return NULL;
}

/* Parses the command line: 0, 1 (--help) or -1 (a bad argument, said). */
static int parse_args(int argc, char **argv, int *workers, const char **host,
                      int *port)
{
    static const char prog[] = "http_hello";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        int64_t *ns = time_opt(a);
        if (ex_is_help(a))
            return 1;
        if (ns) {
            if (!(v = ex_value(prog, argc, argv, &i)) ||
                !ex_secs(prog, a, v, ns))
                return -1;
        } else if (!strcmp(a, "--host")) {
            if (!(*host = ex_value(prog, argc, argv, &i)))
                return -1;
        } else if (ex_server_arg(prog, argc, argv, &i, workers, port) < 0) {
            return -1;
        }
    }
    return *port < 0 ? ex_bad(prog, "missing", "PORT") : 0;
}

int main(int argc, char **argv)
{
    int workers = 0, port = -1;
    const char *host = "127.0.0.1";
    int r = parse_args(argc, argv, &workers, &host, &port);
    if (r != 0)
        return ex_usage(r > 0, usage_text);
    init_char_class();
    if (pthread_key_create(&cache_key, bufs_flush) != 0)
        return 1;
    int sigs[2] = {SIGINT, SIGTERM}, usr1 = SIGUSR1;
    struct server srv;
    memset(&srv, 0, sizeof srv);
    /* Signals first: threads started later inherit the blocked mask. */
    struct dumper d;
    fut_future_init(&d.base, &dumper_vt);
    r = fut_signal_open(sigs, 2, &srv.sig);
    if (r == 0)
        r = fut_signal_open(&usr1, 1, &d.sig);
    if (r < 0) {
        fprintf(stderr, "http_hello: signals: %s\n", fut_strerror(r));
        return 1;
    }
    struct sockaddr_storage ss;
    socklen_t len;
    if (fut_addr_parse(host, port, &ss, &len) != 0) {
        ex_bad("http_hello", "bad address", host);
        return ex_usage(0, usage_text);
    }
    r = fut_tcp_listen((struct sockaddr *)&ss, len, 4096, &srv.listener);
    if (r < 0) {
        fprintf(stderr, "http_hello: listen %s:%d: %s\n", host, port,
                fut_strerror(r));
        return 1;
    }
    if (fut_io_local_addr(srv.listener, &ss, &len) == 0)
        port = fut_addr_port(&ss); /* the one port 0 picked */
    struct fut_rt_config cfg;
    fut_rt_config_init(&cfg);
    if (workers > 0) {
        cfg.flavor = FUT_RT_MULTI_THREAD;
        cfg.workers = workers;
    }
    struct fut_runtime *rt;
    r = fut_runtime_new(&cfg, &rt);
    if (r < 0) {
        fprintf(stderr, "http_hello: runtime: %s%s%s\n", fut_strerror(r),
                *fut_io_backend_error() ? ": " : "", fut_io_backend_error());
        /* 77: this build lacks the flavor (bench/run.sh skips) */
        return r == FUT_EINVAL && workers > 0 ? 77 : 1;
    }
    fprintf(stderr, "backend: %s\n", fut_runtime_backend(rt));
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
    fprintf(stderr, "http_hello: listening on %s:%d (%s)\n", host, port,
            workers ? "multi-thread" : "current-thread");
    fut_future_init(&srv.base, &server_vt);
    fut_block_on(rt, &srv.base);
    fut_drop(&srv.base);
    fut_runtime_free(rt);
    bufs_flush(NULL);
    if (srv.listener)
        fut_io_close(srv.listener);
    fut_io_close(srv.sig);
    fut_io_close(d.sig);
    return 0;
}
