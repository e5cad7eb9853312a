/* SPDX-License-Identifier: MIT */
/* resp: RESP2 request parser and reply writer (see resp.h). The parse
 * follows Redis 7.0's processMultibulkBuffer / processInlineBuffer step by
 * step, so that every malformed request gets the reply Redis gives. */
#include "resp.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ARGS_MIN 8

int resp_parser_init(struct resp_parser *p, const struct resp_limits *lim)
{
    memset(p, 0, sizeof *p);
    p->lim = *lim;
    p->bulk_len = -1;
    p->cap = RESP_READ_CHUNK;
    p->buf = malloc(p->cap);
    p->argcap = ARGS_MIN;
    p->off = malloc(p->argcap * sizeof *p->off);
    p->len = malloc(p->argcap * sizeof *p->len);
    p->argv = malloc(p->argcap * sizeof *p->argv);
    if (!p->buf || !p->off || !p->len || !p->argv) {
        resp_parser_fini(p);
        return -ENOMEM;
    }
    return 0;
}

void resp_parser_fini(struct resp_parser *p)
{
    free(p->buf);
    free(p->off);
    free(p->len);
    free(p->argv);
    free(p->inline_tmp);
    memset(p, 0, sizeof *p);
}

/* Moves the incomplete command at 'cmd_start' to the front. */
static void compact(struct resp_parser *p)
{
    size_t shift = p->cmd_start;
    if (shift == 0)
        return;
    memmove(p->buf, p->buf + shift, p->end - shift);
    p->end -= shift;
    p->pos -= shift;
    p->cmd_start = 0;
    for (size_t i = 0; i < p->argc; i++)
        p->off[i] -= shift;
}

char *resp_prepare_read(struct resp_parser *p, size_t *room)
{
    if (!resp_pending(p)) {
        p->end = p->pos = p->cmd_start = 0;
        if (p->cap > 4 * RESP_READ_CHUNK) { /* a big command went by */
            char *nb = malloc(RESP_READ_CHUNK);
            if (nb) {
                free(p->buf);
                p->buf = nb;
                p->cap = RESP_READ_CHUNK;
            }
        }
    }
    size_t want = RESP_READ_CHUNK;
    if (p->mb_left > 0 && p->bulk_len >= RESP_BIG_ARG) {
        /* the rest of a big bulk, in one piece: it stays where it lands */
        size_t have = p->end - p->pos;
        size_t need = (size_t)p->bulk_len + 2;
        want = need > have ? need - have : 0;
        if (want < 512)
            want = 512;
    }
    if (p->cap - p->end < want && p->cmd_start > 0 &&
        p->cap - (p->end - p->cmd_start) >= want)
        compact(p);
    if (p->cap - p->end < want) {
        compact(p);
        size_t ncap = p->end + want;
        if (ncap < 2 * p->cap && want == RESP_READ_CHUNK)
            ncap = 2 * p->cap;
        char *nb = realloc(p->buf, ncap);
        if (!nb)
            return NULL;
        p->buf = nb;
        p->cap = ncap;
    }
    *room = p->cap - p->end;
    return p->buf + p->end;
}

void resp_commit_read(struct resp_parser *p, size_t n)
{
    p->end += n;
}

static int fail(struct resp_parser *p, const char *msg)
{
    p->error = msg;
    return RESP_ERROR;
}

static int push_arg(struct resp_parser *p, size_t off, size_t len)
{
    if (p->argc == p->argcap) {
        size_t n = p->argcap * 2;
        size_t *o = realloc(p->off, n * sizeof *o);
        if (o)
            p->off = o;
        size_t *l = realloc(p->len, n * sizeof *l);
        if (l)
            p->len = l;
        struct resp_arg *a = realloc(p->argv, n * sizeof *a);
        if (a)
            p->argv = a;
        if (!o || !l || !a)
            return -ENOMEM;
        p->argcap = n;
    }
    p->off[p->argc] = off;
    p->len[p->argc] = len;
    p->argc++;
    return 0;
}

/* Redis' sdssplitargs, in place over the NUL-terminated copy 's' of an
 * inline line; arguments become (offset, length) pairs into 's'. Returns 0,
 * -1 for unbalanced quotes, -ENOMEM. */
static int is_hex(int c)
{
    return isxdigit((unsigned char)c);
}
static int hex_val(int c)
{
    return isdigit(c) ? c - '0' : tolower(c) - 'a' + 10;
}

static int split_inline(struct resp_parser *p, char *s)
{
    char *r = s; /* read */
    for (;;) {
        while (*r && isspace((unsigned char)*r))
            r++;
        if (!*r)
            return 0;
        char *start = r, *w = r; /* unescaped bytes overwrite the input */
        int inq = 0, insq = 0, done = 0;
        while (!done) {
            if (inq) {
                if (r[0] == '\\' && r[1] == 'x' && is_hex(r[2]) &&
                    is_hex(r[3])) {
                    *w++ = (char)(hex_val(r[2]) * 16 + hex_val(r[3]));
                    r += 3;
                } else if (r[0] == '\\' && r[1]) {
                    r++;
                    switch (*r) {
                    case 'n':
                        *w++ = '\n';
                        break;
                    case 'r':
                        *w++ = '\r';
                        break;
                    case 't':
                        *w++ = '\t';
                        break;
                    case 'b':
                        *w++ = '\b';
                        break;
                    case 'a':
                        *w++ = '\a';
                        break;
                    default:
                        *w++ = *r;
                        break;
                    }
                } else if (*r == '"') {
                    if (r[1] && !isspace((unsigned char)r[1]))
                        return -1; /* closing quote must end the arg */
                    done = 1;
                } else if (!*r) {
                    return -1;
                } else {
                    *w++ = *r;
                }
            } else if (insq) {
                if (r[0] == '\\' && r[1] == '\'') {
                    r++;
                    *w++ = '\'';
                } else if (*r == '\'') {
                    if (r[1] && !isspace((unsigned char)r[1]))
                        return -1;
                    done = 1;
                } else if (!*r) {
                    return -1;
                } else {
                    *w++ = *r;
                }
            } else {
                switch (*r) {
                case ' ':
                case '\n':
                case '\r':
                case '\t':
                case '\0':
                    done = 1;
                    break;
                case '"':
                    inq = 1;
                    break;
                case '\'':
                    insq = 1;
                    break;
                default:
                    *w++ = *r;
                    break;
                }
            }
            if (*r)
                r++;
        }
        if (push_arg(p, (size_t)(start - s), (size_t)(w - start)) != 0)
            return -ENOMEM;
    }
}

/* One inline line; RESP_CMD, RESP_MORE (incomplete, or an empty line was
 * skipped: the caller loops) or RESP_ERROR. */
static int parse_inline(struct resp_parser *p, int *skipped)
{
    char *b = p->buf + p->pos;
    size_t avail = p->end - p->pos;
    char *nl = memchr(b, '\n', avail);
    *skipped = 0;
    if (!nl) {
        if (avail > p->lim.max_inline)
            return fail(p, "Protocol error: too big inline request");
        return RESP_MORE;
    }
    size_t linelen = (size_t)(nl - b), eat = linelen + 1;
    if (nl != b && nl[-1] == '\r')
        linelen--;
    free(p->inline_tmp);
    p->inline_tmp = malloc(linelen + 1);
    if (!p->inline_tmp)
        return fail(p, "Protocol error: out of memory");
    memcpy(p->inline_tmp, b, linelen);
    p->inline_tmp[linelen] = '\0';
    p->argc = 0;
    int r = split_inline(p, p->inline_tmp);
    if (r == -1)
        return fail(p, "Protocol error: unbalanced quotes in request");
    if (r < 0)
        return fail(p, "Protocol error: out of memory");
    p->pos += eat;
    if (p->argc == 0) {
        *skipped = 1;
        return RESP_MORE;
    }
    p->inline_cmd = 1;
    for (size_t i = 0; i < p->argc; i++) {
        p->argv[i].p = p->inline_tmp + p->off[i];
        p->argv[i].len = p->len[i];
    }
    return RESP_CMD;
}

/* A "<c><number>\r\n" line at 'pos'; 1 with '*v', 0 incomplete. */
static int count_line(struct resp_parser *p, long long *v, int *ok)
{
    char *b = p->buf + p->pos;
    size_t avail = p->end - p->pos;
    char *cr = memchr(b, '\r', avail);
    if (!cr || (size_t)(cr - b) + 2 > avail)
        return 0;
    *ok = resp_str2ll(b + 1, (size_t)(cr - b - 1), v);
    p->pos += (size_t)(cr - b) + 2;
    return 1;
}

int resp_next(struct resp_parser *p)
{
    if (p->error)
        return RESP_ERROR;
    for (;;) {
        if (p->mb_left == 0) {
            p->argc = 0;
            p->cmd_start = p->pos;
            p->inline_cmd = 0;
            if (p->pos == p->end)
                return RESP_MORE;
            if (p->buf[p->pos] != '*') {
                int skipped, r = parse_inline(p, &skipped);
                if (r == RESP_MORE && skipped)
                    continue;
                return r;
            }
            long long n;
            int ok;
            size_t avail = p->end - p->pos;
            if (!count_line(p, &n, &ok)) {
                if (avail > p->lim.max_inline)
                    return fail(p, "Protocol error: too big mbulk count "
                                   "string");
                return RESP_MORE;
            }
            if (!ok || n > INT_MAX)
                return fail(p, "Protocol error: invalid multibulk length");
            if (n <= 0)
                continue; /* "*0" and "*-1" are skipped */
            p->mb_left = n;
            p->bulk_len = -1;
        }
        while (p->mb_left > 0) {
            if (p->bulk_len == -1) {
                size_t avail = p->end - p->pos;
                char c = p->buf[p->pos];
                long long n;
                int ok;
                if (avail == 0)
                    return RESP_MORE;
                size_t at = p->pos;
                if (!count_line(p, &n, &ok)) {
                    if (avail > p->lim.max_inline)
                        return fail(p, "Protocol error: too big bulk count "
                                       "string");
                    return RESP_MORE;
                }
                if (c != '$') {
                    p->pos = at;
                    /* no line breaks in error texts (addReplyErrorFormat) */
                    snprintf(p->errbuf, sizeof p->errbuf,
                             "Protocol error: expected '$', got '%c'",
                             c == '\r' || c == '\n' ? ' ' : c);
                    return fail(p, p->errbuf);
                }
                if (!ok || n < 0 || n > p->lim.max_bulk)
                    return fail(p, "Protocol error: invalid bulk length");
                p->bulk_len = n;
            }
            if (p->end - p->pos < (size_t)p->bulk_len + 2)
                return RESP_MORE;
            if (push_arg(p, p->pos, (size_t)p->bulk_len) != 0)
                return fail(p, "Protocol error: out of memory");
            p->pos += (size_t)p->bulk_len + 2; /* Redis skips the CRLF */
            p->bulk_len = -1;
            p->mb_left--;
        }
        for (size_t i = 0; i < p->argc; i++) {
            p->argv[i].p = p->buf + p->off[i];
            p->argv[i].len = p->len[i];
        }
        return RESP_CMD;
    }
}

/* --------------------------------------------------------------- numbers */

int resp_str2ll(const char *s, size_t n, long long *out)
{
    if (n == 0 || n > 20)
        return 0;
    if (n == 1 && s[0] == '0') {
        *out = 0;
        return 1;
    }
    size_t i = 0;
    int neg = 0;
    if (s[0] == '-') {
        neg = 1;
        if (++i == n)
            return 0;
    }
    if (s[i] < '1' || s[i] > '9')
        return 0;
    unsigned long long v = 0;
    for (; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return 0;
        unsigned d = (unsigned)(s[i] - '0');
        if (v > (ULLONG_MAX - d) / 10)
            return 0;
        v = v * 10 + d;
    }
    if (neg) {
        if (v > (unsigned long long)LLONG_MAX + 1)
            return 0;
        *out = v == (unsigned long long)LLONG_MAX + 1 ? LLONG_MIN
                                                      : -(long long)v;
    } else {
        if (v > LLONG_MAX)
            return 0;
        *out = (long long)v;
    }
    return 1;
}

int resp_ll2str(char *buf, long long v)
{
    char tmp[24];
    int n = 0, neg = v < 0;
    unsigned long long u =
        neg ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    do {
        tmp[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    int len = 0;
    if (neg)
        buf[len++] = '-';
    while (n)
        buf[len++] = tmp[--n];
    buf[len] = '\0';
    return len;
}

/* ---------------------------------------------------------------- replies */

void resp_out_init(struct resp_out *o)
{
    memset(o, 0, sizeof *o);
}

void resp_out_fini(struct resp_out *o)
{
    free(o->buf);
    memset(o, 0, sizeof *o);
}

void resp_out_consume(struct resp_out *o)
{
    if (o->sent == o->len) {
        o->len = o->sent = 0;
        if (o->cap > 1024 * 1024) { /* a big reply went by */
            free(o->buf);
            o->buf = NULL;
            o->cap = 0;
        }
        return;
    }
    memmove(o->buf, o->buf + o->sent, o->len - o->sent);
    o->len -= o->sent;
    o->sent = 0;
}

static int reserve(struct resp_out *o, size_t n)
{
    if (o->oom)
        return -1;
    if (o->cap - o->len >= n)
        return 0;
    size_t ncap = o->cap ? o->cap * 2 : 4096;
    while (ncap - o->len < n)
        ncap *= 2;
    char *nb = realloc(o->buf, ncap);
    if (!nb) {
        o->oom = 1;
        return -1;
    }
    o->buf = nb;
    o->cap = ncap;
    return 0;
}

void resp_add_raw(struct resp_out *o, const void *p, size_t n)
{
    if (reserve(o, n) != 0)
        return;
    memcpy(o->buf + o->len, p, n);
    o->len += n;
}

/* "<c><number>\r\n" */
static void add_count(struct resp_out *o, char c, long long v)
{
    if (reserve(o, 24) != 0)
        return;
    char *w = o->buf + o->len;
    *w++ = c;
    w += resp_ll2str(w, v);
    *w++ = '\r';
    *w++ = '\n';
    o->len = (size_t)(w - o->buf);
}

/* A status or error line; \r and \n inside become spaces (Redis). */
static void add_line(struct resp_out *o, char c, const char *s, size_t n)
{
    if (reserve(o, n + 3) != 0)
        return;
    char *w = o->buf + o->len;
    *w++ = c;
    for (size_t i = 0; i < n; i++)
        *w++ = s[i] == '\r' || s[i] == '\n' ? ' ' : s[i];
    *w++ = '\r';
    *w++ = '\n';
    o->len = (size_t)(w - o->buf);
}

void resp_add_simple(struct resp_out *o, const char *s)
{
    add_line(o, '+', s, strlen(s));
}

void resp_add_error(struct resp_out *o, const char *s)
{
    add_line(o, '-', s, strlen(s));
}

void resp_add_errorf(struct resp_out *o, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n >= sizeof buf)
        n = sizeof buf - 1;
    add_line(o, '-', buf, (size_t)n);
}

void resp_add_int(struct resp_out *o, long long v)
{
    add_count(o, ':', v);
}

void resp_add_bulk(struct resp_out *o, const void *p, size_t n)
{
    add_count(o, '$', (long long)n);
    if (reserve(o, n + 2) != 0)
        return;
    memcpy(o->buf + o->len, p, n);
    o->buf[o->len + n] = '\r';
    o->buf[o->len + n + 1] = '\n';
    o->len += n + 2;
}

void resp_add_bulk_str(struct resp_out *o, const char *s)
{
    resp_add_bulk(o, s, strlen(s));
}

void resp_add_null(struct resp_out *o)
{
    resp_add_raw(o, "$-1\r\n", 5);
}

void resp_add_null_array(struct resp_out *o)
{
    resp_add_raw(o, "*-1\r\n", 5);
}

void resp_add_array(struct resp_out *o, long long n)
{
    add_count(o, '*', n);
}

void resp_add_ok(struct resp_out *o)
{
    resp_add_raw(o, "+OK\r\n", 5);
}
