/* SPDX-License-Identifier: MIT */
/** \file
 * fut net: TCP, UDP and Unix sockets, pipes, stdin/stdout, signals and
 * name resolution, all as 'struct fut_io' handles (io.h) with futures
 * and streams over them.
 *
 * Every constructor here makes a non-blocking, close-on-exec fd and never
 * blocks; it may be called on any thread, inside or outside a runtime
 * (registration with the reactor happens at the first wait, see io.h).
 * Constructors return 0 with the handle set, or a negative code (-errno
 * from the syscall: -EMFILE, -EADDRINUSE, ...; FUT_ENOMEM; FUT_EINVAL)
 * with nothing left open.
 */
#ifndef FUT_NET_H
#define FUT_NET_H

#include <netdb.h>
#include <sys/socket.h>

#include "fut/io.h"
#include "fut/stream.h"
#include "fut/time.h"

FUT_BEGIN_DECLS

/* ------------------------------------------------------------ addresses */

/** Fills '*ss' with the numeric IPv4 or IPv6 address 'host' ("127.0.0.1",
 * "::1"; NULL = 127.0.0.1) and 'port'. Returns 0 with '*len' set, or
 * FUT_EINVAL (not a numeric address, port out of range). No DNS: see
 * fut_getaddrinfo. */
FUT_EXTERN int fut_addr_parse(const char *host, int port,
                              struct sockaddr_storage *ss, socklen_t *len);
/** The local / peer address of a socket. Returns 0 or -errno. */
FUT_EXTERN int fut_io_local_addr(struct fut_io *io,
                                 struct sockaddr_storage *ss, socklen_t *len);
/** The peer address of a connected socket. Returns 0 or -errno. */
FUT_EXTERN int fut_io_peer_addr(struct fut_io *io,
                                struct sockaddr_storage *ss, socklen_t *len);
/** The port of an AF_INET/AF_INET6 address, or -1. */
FUT_EXTERN int fut_addr_port(const struct sockaddr_storage *ss);

/* ------------------------------------------------------ socket options */

/** setsockopt / getsockopt of an int-valued option. 0 or -errno. */
FUT_EXTERN int fut_io_set_option(struct fut_io *io, int level, int name,
                                 int value);
/** getsockopt of an int-valued option into '*value'. 0 or -errno. */
FUT_EXTERN int fut_io_get_option(struct fut_io *io, int level, int name,
                                 int *value);
/** TCP_NODELAY on/off. 0 or -errno. */
FUT_EXTERN int fut_tcp_set_nodelay(struct fut_io *io, int on);
/** SO_KEEPALIVE on/off. 0 or -errno. */
FUT_EXTERN int fut_tcp_set_keepalive(struct fut_io *io, int on);
/** SO_ERROR: the pending socket error (0 when none) and clears it. */
FUT_EXTERN int fut_io_take_error(struct fut_io *io);

/* ------------------------------------------------------------------ TCP */

/** A listening TCP socket bound to 'addr' (SO_REUSEADDR; backlog <= 0:
 * SOMAXCONN). Port 0 picks a free port: read it with fut_io_local_addr. */
FUT_EXTERN int fut_tcp_listen(const struct sockaddr *addr, socklen_t len,
                              int backlog, struct fut_io **out);

/** fut_accept: accepts one connection on a TCP or Unix listener. Output:
 * 'result' = 0 with 'conn' (a new handle: yours to close) and 'peer' /
 * 'peerlen', or -errno for an error that retrying will not fix (-EBADF,
 * -EINVAL, -ENOTSOCK, ...).
 * Errors that go away are handled inside: ECONNABORTED, EPROTO, EPERM and
 * friends are retried at once; EMFILE, ENFILE, ENOBUFS and ENOMEM (out
 * of fds or memory) back off on a timer (1 ms, doubling up to 100 ms)
 * instead of spinning, and accept is tried again when it fires, so the
 * listener recovers by itself once fds are freed. 'backoffs' counts
 * those waits.
 * cancel-safe: a connection is taken from the kernel only in the poll
 * that returns it; a dropped accept leaves it in the backlog. */
struct fut_accept {
    struct fut_future base;  /**< the future header (fut_poll, fut_drop) */
    struct fut_io *listener; /**< private */
    int waiting;             /**< private */
    int backoff_ms;          /**< private */
    int backing_off;         /**< private */
    long backoffs;           /**< read-only: backoff waits so far */
    struct fut_timer_entry timer; /**< private */
    int result;                   /**< output */
    struct fut_io *conn;          /**< output */
    struct sockaddr_storage peer; /**< output */
    socklen_t peerlen;            /**< output */
};
/** Initialises 'a' to accept on 'listener' (which must outlive it). */
FUT_EXTERN void fut_accept_init(struct fut_accept *a,
                                struct fut_io *listener);

/** fut_incoming: the accept loop as a stream (C15). Item: 'struct fut_io *'
 * (a new connection, yours to close). Transient errors are handled as
 * fut_accept does; a permanent one ends the stream with 'error' set.
 * Does not own the listener.
 * cancel-safe (as fut_accept). */
struct fut_incoming {
    struct fut_stream base; /**< the stream header (fut_stream_poll_next) */
    struct fut_accept acc;  /**< private */
    int error;              /**< read-only: why the stream ended, or 0 */
};
/** Initialises 's' to accept on 'listener' (which must outlive it). */
FUT_EXTERN void fut_incoming_init(struct fut_incoming *s,
                                  struct fut_io *listener);

/** fut_connect: connects a stream socket. Output: 'result' = 0 with 'conn'
 * (yours to close), FUT_ETIMEDOUT once 'deadline' passed (absolute,
 * runtime clock; -1 = no limit other than the kernel's), or -errno
 * (-ECONNREFUSED, ...). The socket is closed on every error.
 * cancel-safe: dropping it abandons the attempt and closes the socket
 * (nothing was delivered to anyone). */
struct fut_connect {
    struct fut_future base; /**< the future header (fut_poll, fut_drop) */
    struct sockaddr_storage addr; /**< private */
    socklen_t addrlen;            /**< private */
    int64_t deadline;             /**< private */
    int stage;                    /**< private */
    int waiting;                  /**< private */
    struct fut_io *io;            /**< private: the socket being connected */
    struct fut_timer_entry timer; /**< private */
    int result;                   /**< output */
    struct fut_io *conn;          /**< output */
};
/** TCP to 'addr' (IPv4 or IPv6). TCP_NODELAY is left off: set it with
 * fut_tcp_set_nodelay. */
FUT_EXTERN void fut_tcp_connect_init(struct fut_connect *c,
                                     const struct sockaddr *addr,
                                     socklen_t len, int64_t deadline);

/* ------------------------------------------------------------------ UDP */

/** A UDP socket bound to 'addr' (port 0: any free port). */
FUT_EXTERN int fut_udp_bind(const struct sockaddr *addr, socklen_t len,
                            struct fut_io **out);
/** Sets the default peer (connect(2) on a datagram socket: never blocks);
 * then fut_io_send / fut_io_recv (or write / read) exchange datagrams
 * with it. 0 or -errno. */
FUT_EXTERN int fut_udp_connect(struct fut_io *io, const struct sockaddr *addr,
                               socklen_t len);

/* ----------------------------------------------------------------- Unix */

/** A listening Unix stream socket at 'path' (an existing socket file there
 * is not removed: -EADDRINUSE). Accept with fut_accept. */
FUT_EXTERN int fut_unix_listen(const char *path, int backlog,
                               struct fut_io **out);
/** Connects a Unix stream socket to 'path' (FUT_EINVAL when the path does
 * not fit sun_path: reported by the future). See fut_connect. */
FUT_EXTERN void fut_unix_connect_init(struct fut_connect *c, const char *path,
                                      int64_t deadline);
/** A Unix datagram socket bound to 'path' (NULL: unbound). Use
 * fut_io_send_to / fut_io_recv_from. */
FUT_EXTERN int fut_unix_datagram_bind(const char *path, struct fut_io **out);
/** A connected pair (socketpair): type SOCK_STREAM or SOCK_DGRAM. */
FUT_EXTERN int fut_unix_pair(int type, struct fut_io **a, struct fut_io **b);

/* -------------------------------------------------------- pipes, stdio */

/** A pipe: '*rd' reads what '*wr' writes. */
FUT_EXTERN int fut_pipe_open(struct fut_io **rd, struct fut_io **wr);

/** Standard input / output as async streams. The fd (0 or 1) must be one
 * epoll accepts (a pipe, a socket, a terminal): fut sets O_NONBLOCK on it
 * and restores its flags at fut_io_close (note that the flag belongs to
 * the open file description, which other processes sharing the terminal
 * or pipe see too until then). A regular file or /dev/null gives -EPERM:
 * read it with fut_fs_read on fd 0 instead. Closing the handle does not
 * close fd 0 or 1. One handle per fd at a time. */
FUT_EXTERN int fut_stdin_open(struct fut_io **out);
/** Standard output (fd 1) as an async stream: as fut_stdin_open. */
FUT_EXTERN int fut_stdout_open(struct fut_io **out);

/* -------------------------------------------------------------- signals */

/** Receives the signals 'sigs[0..n)' through a signalfd (Ctrl-C, graceful
 * shutdown). Blocks them with pthread_sigmask in the calling thread so
 * they queue for the signalfd: call it from the main thread before other
 * threads start (they inherit the mask; the blocking pool's threads
 * block every signal), or block them in every thread yourself. Closing
 * the handle does not unblock them. */
FUT_EXTERN int fut_signal_open(const int *sigs, int n, struct fut_io **out);

/** fut_signal_recv: waits for one of the signals. Output: 'result' = 0 with
 * 'signo', or -errno. cancel-safe: a signal is dequeued only by the poll
 * that returns it. */
struct fut_signal_recv {
    struct fut_future base; /**< the future header (fut_poll, fut_drop) */
    struct fut_io *io;      /**< private */
    int waiting;            /**< private */
    int result;             /**< output */
    int signo;              /**< output */
};
/** Initialises 'f' over the signal handle 'sig' (fut_signal_open), which
 * must outlive it. */
FUT_EXTERN void fut_signal_recv_init(struct fut_signal_recv *f,
                                     struct fut_io *sig);

/** fut_signal_stream: the signals as a stream (C15). Item: int, the signal
 * number. Ends only on an error ('error' set). cancel-safe. Does not own
 * the handle. */
struct fut_signal_stream {
    struct fut_stream base; /**< the stream header (fut_stream_poll_next) */
    struct fut_signal_recv rx; /**< private */
    int error;                 /**< read-only */
};
/** Initialises 's' over the signal handle 'sig' (fut_signal_open), which
 * must outlive it. */
FUT_EXTERN void fut_signal_stream_init(struct fut_signal_stream *s,
                                       struct fut_io *sig);

/* ------------------------------------------------------ name resolution */

/** fut_getaddrinfo: getaddrinfo(3) on the blocking pool. 'host',
 * 'service' (either may be NULL, not both) and 'hints' (may be NULL) are
 * copied at the first poll. Output: 'result' = 0 with 'res' (free it with
 * freeaddrinfo), or an error: EAI_NONAME -> -ENOENT, EAI_AGAIN -> -EAGAIN,
 * EAI_MEMORY -> -ENOMEM, EAI_FAMILY -> -EAFNOSUPPORT, EAI_SOCKTYPE ->
 * -ESOCKTNOSUPPORT, EAI_SERVICE -> -ESRCH, EAI_BADFLAGS -> -EINVAL,
 * EAI_NODATA -> -ENODATA, EAI_ADDRFAMILY -> -EADDRNOTAVAIL, EAI_SYSTEM ->
 * -errno, others -> -EIO; or the pool's errors (fut_spawn_blocking).
 * cancel-safe: dropped early, the lookup is cancelled or its result
 * freed. */
struct fut_getaddrinfo {
    struct fut_future base; /**< the future header (fut_poll, fut_drop) */
    const char *host;       /**< private */
    const char *service;    /**< private */
    int hints[4];           /**< private: flags, family, socktype,
                                  protocol */
    int has_hints;          /**< private */
    void *job;              /**< private */
    int result;             /**< output */
    struct addrinfo *res;   /**< output */
};
/** Initialises 'f' to resolve 'host' / 'service' with 'hints' (see
 * above: copied at the first poll). */
FUT_EXTERN void fut_getaddrinfo_init(struct fut_getaddrinfo *f,
                                     const char *host, const char *service,
                                     const struct addrinfo *hints);

FUT_END_DECLS

#endif /* FUT_NET_H */
