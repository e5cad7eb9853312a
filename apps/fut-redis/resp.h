/* SPDX-License-Identifier: MIT */
/* resp: the RESP2 protocol - an incremental request parser (multibulk and
 * inline) and the reply writer.
 *
 * The parser works on the connection's read buffer in place: a command's
 * arguments are slices ('struct resp_arg') into that buffer, valid until
 * the next call that reads into it, so a value is copied once - by the
 * command that stores it into the keyspace - and never by the parser.
 * What the parser keeps between reads is only its position and counts.
 * Before a read, the bytes of a command that is not complete yet are
 * moved to the front of the buffer, but only when the free room at the
 * end is too small for the next read (resp_prepare_read); a bulk value
 * larger than RESP_BIG_ARG is given room for all of its bytes at once,
 * so it lands where it stays (Redis' PROTO_MBULK_BIG_ARG does the same).
 *
 * Limits are Redis' (proto-max-bulk-len, the 64 KiB inline limit); a
 * request that breaks one gets Redis' exact error text and the parser
 * stops for good (the server replies and closes, as Redis does).
 *
 * Not thread-safe: one parser per connection, used by its task.
 */
#ifndef FUT_REDIS_RESP_H
#define FUT_REDIS_RESP_H

#include <stddef.h>
#include <stdint.h>

/* Redis' PROTO_INLINE_MAX_SIZE: longest inline request, and longest
 * "*<count>" / "$<len>" line. */
#define RESP_INLINE_MAX_DEFAULT (64 * 1024)
/* Redis' proto-max-bulk-len default (512 MB). */
#define RESP_MAX_BULK_DEFAULT (512LL * 1024 * 1024)
/* Bulks this large get room for all of their bytes before reading. */
#define RESP_BIG_ARG (32 * 1024)
/* Read size of a connection's buffer. */
#define RESP_READ_CHUNK (16 * 1024)

struct resp_limits {
    long long max_bulk; /* longest bulk string (proto-max-bulk-len) */
    size_t max_inline;  /* longest inline request or count line */
};

/* An argument: a slice of the read buffer. */
struct resp_arg {
    const char *p;
    size_t len;
};

enum resp_status {
    RESP_MORE = 0,  /* no complete command in the buffer: read more */
    RESP_CMD = 1,   /* a command: resp_argv() / resp_argc() */
    RESP_ERROR = -1 /* protocol error: resp_error() has Redis' text */
};

/* The read buffer and the parse state of one connection. */
struct resp_parser {
    char *buf;        /* the read buffer (malloc) */
    size_t cap;       /* its size */
    size_t end;       /* bytes read into it */
    size_t pos;       /* first byte not parsed yet */
    size_t cmd_start; /* start of the command being parsed */
    /* multibulk state, kept across reads (Redis' multibulklen/bulklen) */
    long long mb_left;  /* arguments still to parse; 0: no command */
    long long bulk_len; /* length of the bulk being read, -1: header */
    int inline_cmd;     /* the command was inline */
    /* parsed arguments: offsets into 'buf' while the command is
     * incomplete (the buffer may move), slices once it is complete */
    size_t *off, *len;
    struct resp_arg *argv;
    size_t argc, argcap;
    char *inline_tmp;  /* unescaped inline arguments (own bytes) */
    const char *error; /* the protocol error, once RESP_ERROR */
    char errbuf[64];   /* its text, when formatted */
    struct resp_limits lim;
};

/* 0, or -ENOMEM. */
int resp_parser_init(struct resp_parser *p, const struct resp_limits *lim);
void resp_parser_fini(struct resp_parser *p);

/* Makes room for the next read and returns where it goes ('*room' bytes
 * there). NULL: no memory. */
char *resp_prepare_read(struct resp_parser *p, size_t *room);
/* Records that 'n' bytes were read at the place prepare_read gave. */
void resp_commit_read(struct resp_parser *p, size_t n);

/* Parses the next command. RESP_CMD: its arguments are resp_argv(p)
 * [0 .. resp_argc(p)), valid until the next resp_next or read. */
int resp_next(struct resp_parser *p);
static inline size_t resp_argc(const struct resp_parser *p)
{
    return p->argc;
}
static inline struct resp_arg *resp_argv(struct resp_parser *p)
{
    return p->argv;
}
/* Redis' text of the protocol error ("Protocol error: ..."). */
static inline const char *resp_error(const struct resp_parser *p)
{
    return p->error;
}
/* 1 when bytes of an incomplete command are buffered. */
static inline int resp_pending(const struct resp_parser *p)
{
    return p->end > p->pos || p->mb_left > 0;
}

/* ------------------------------------------------------------ replies */

/* A growable output buffer; replies are appended in RESP2. */
struct resp_out {
    char *buf;
    size_t len, cap;
    size_t sent; /* bytes already written to the socket */
    int oom;     /* an append failed: the connection must close */
};

void resp_out_init(struct resp_out *o);
void resp_out_fini(struct resp_out *o);
/* Drops what was sent; keeps the rest. */
void resp_out_consume(struct resp_out *o);

void resp_add_raw(struct resp_out *o, const void *p, size_t n);
void resp_add_simple(struct resp_out *o, const char *s); /* +s */
void resp_add_error(struct resp_out *o, const char *s);  /* -s */
void resp_add_errorf(struct resp_out *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void resp_add_int(struct resp_out *o, long long v); /* :v */
void resp_add_bulk(struct resp_out *o, const void *p, size_t n);
void resp_add_bulk_str(struct resp_out *o, const char *s);
void resp_add_null(struct resp_out *o);               /* $-1 */
void resp_add_null_array(struct resp_out *o);         /* *-1 */
void resp_add_array(struct resp_out *o, long long n); /* *n */
void resp_add_ok(struct resp_out *o);

/* Redis' string2ll: the whole slice is a base-10 long long, no spaces, no
 * leading zeros or '+'. 1 on success. */
int resp_str2ll(const char *s, size_t n, long long *out);
/* long long -> decimal, returns the length ('buf' >= 21 bytes). */
int resp_ll2str(char *buf, long long v);

#endif
