/* SPDX-License-Identifier: MIT */
/* The syscall shim: every I/O system call of the library goes through
 * these wrappers, so tests can inject failures deterministically.
 *
 * Each wrapper returns what the syscall returns on success and -errno on
 * failure (never errno: results travel in futures). EINTR is returned like
 * any other error: callers retry it themselves, and injected EINTRs prove
 * they do.
 *
 * Fault injection (tests only; src/platform/sys.c):
 *   - a rule matches calls by operation (FUT__SYS_*, or FUT__SYS_ANY) and
 *     by fd (or any fd); it lets 'skip' matching calls through, then acts
 *     on the next 'count' of them (-1: all of them): fails them with
 *     'err' (a negative errno), or, when 'err' is 0, truncates their
 *     length to 'max_len' (a short read or write);
 *   - rules and per-operation call counters are active only while
 *     armed (a rule installed, or counting switched on): an unarmed shim
 *     costs one relaxed load per call;
 *   - the first matching rule acts; a call no rule acts on goes to the
 *     kernel.
 * Thread: rules are kept under a mutex and may be changed from any
 * thread; a change is seen by the next call.
 */
#ifndef FUT_PLATFORM_SYS_H
#define FUT_PLATFORM_SYS_H

#include <errno.h>
#include <netdb.h>
#include <signal.h>
#include <stddef.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "internal.h"

enum fut__sys_op {
    FUT__SYS_READ,
    FUT__SYS_WRITE,
    FUT__SYS_READV,
    FUT__SYS_WRITEV,
    FUT__SYS_RECV,
    FUT__SYS_SEND,
    FUT__SYS_RECVFROM,
    FUT__SYS_SENDTO,
    FUT__SYS_ACCEPT,
    FUT__SYS_CONNECT,
    FUT__SYS_SOCKET,
    FUT__SYS_SOCKETPAIR,
    FUT__SYS_BIND,
    FUT__SYS_LISTEN,
    FUT__SYS_SHUTDOWN,
    FUT__SYS_SETSOCKOPT,
    FUT__SYS_GETSOCKOPT,
    FUT__SYS_GETSOCKNAME,
    FUT__SYS_CLOSE,
    FUT__SYS_FCNTL,
    FUT__SYS_PIPE,
    FUT__SYS_EPOLL_CREATE,
    FUT__SYS_EPOLL_CTL,
    FUT__SYS_EPOLL_WAIT,
    FUT__SYS_EVENTFD,
    FUT__SYS_SIGNALFD,
    FUT__SYS_OPEN,
    FUT__SYS_PREAD,
    FUT__SYS_PWRITE,
    FUT__SYS_FSTAT,
    FUT__SYS_FSYNC,
    FUT__SYS_GETADDRINFO,
    /* Not a syscall: the reactor's point between "no readiness" and
     * taking the fd's lock to register a waker (a hook-only test point). */
    FUT__SYS_PREWAIT,
    FUT__SYS_NOPS,
    FUT__SYS_ANY = -1
};

struct fut__sys_fault {
    int op;         /* enum fut__sys_op, or FUT__SYS_ANY */
    int fd;         /* only calls on this fd; -1 = any fd */
    long skip;      /* matching calls let through before acting */
    long count;     /* matching calls acted on after that; -1 = all */
    int err;        /* < 0: fail with this code; 0: shorten the call */
    size_t max_len; /* err == 0: length cap of the shortened call (>= 1) */
};

/* Installs a rule (at most 16). Returns 0, FUT_EFULL or FUT_EINVAL. */
int fut__sys_inject(const struct fut__sys_fault *f);
/* Removes every rule, stops counting, zeroes the counters. */
void fut__sys_reset(void);
/* Switches per-operation call counting on (1) or off (0). */
void fut__sys_count_calls(int on);
/* Calls of 'op' seen while armed (FUT__SYS_ANY: all operations). */
long fut__sys_calls(int op);
/* Calls a rule acted on so far. */
long fut__sys_injected(void);

/* Tests: 'fn' (NULL: none) runs after every call of 'op' the shim makes
 * while armed, with the call's result, on the calling thread (used to
 * make an event land at an exact point, e.g. right after an EAGAIN).
 * Arms the shim while set. */
void fut__sys_set_hook(int op, void (*fn)(int op, int fd, long res, void *ud),
                       void *ud);
/* Runs the hook, if any (the wrappers call it). */
void fut__sys_after(int op, int fd, long res);
extern void (*fut__sys_hook)(int, int, long, void *);

/* Slow path of every wrapper while armed: counts the call and applies the
 * first matching rule. Returns 1 with '*res' set when the call must fail
 * without reaching the kernel; 0 otherwise ('*len' may have been cut). */
int fut__sys_intercept(int op, int fd, size_t *len, long *res);

extern fut__aword fut__sys_armed;
/* Set on this thread when the last intercepted call was shortened by a
 * rule: the reactor then does not read a short transfer as "the kernel
 * buffer is drained" (it is not: only the length was cut). */
extern _Thread_local int fut__sys_shortened;

/* The common entry of every wrapper. */
#define FUT__SYS_ENTER(op, fd, lenp)                                         \
    do {                                                                     \
        if (FUT_UNLIKELY(fut__load(&fut__sys_armed, FUT__RELAXED))) {        \
            long res_;                                                       \
            if (fut__sys_intercept((op), (fd), (lenp), &res_))               \
                return res_;                                                 \
        }                                                                    \
    } while (0)

/* A simulated network (src/io/simnet_socket.c) takes the socket calls it
 * owns through this hook: socket, socketpair, bind, listen, connect,
 * shutdown, setsockopt, getsockopt, getsockname and close. 'fut__sys_net' holds a
 * fut__sys_net_fn (0: none; set once, relaxed: the function itself
 * decides under its own lock whether a call is its, so a stale read
 * only costs the check). The function returns 1 with '*res' set when the
 * call was the simulation's, 0 to let it reach the kernel. */
struct fut__sys_netcall {
    int op;          /* FUT__SYS_SOCKET, _BIND, ... */
    int fd;          /* -1 for SOCKET */
    int a, b;        /* SOCKET(PAIR): domain, type; SHUTDOWN: how;
                               LISTEN: backlog; SOCKOPT: level, name;
                               GETSOCKNAME: peer */
    const void *in;  /* BIND/CONNECT: the address; SETSOCKOPT */
    void *out;       /* GETSOCKOPT/GETSOCKNAME: the result;
                        SOCKETPAIR: the two fds (int[2]) */
    socklen_t len;   /* length of 'in' */
    socklen_t *lenp; /* in/out length of 'out' */
};
typedef int (*fut__sys_net_fn)(struct fut__sys_netcall *c, long *res);
extern fut__aword fut__sys_net;

ssize_t fut__sys_read(int fd, void *buf, size_t len);
ssize_t fut__sys_write(int fd, const void *buf, size_t len);
ssize_t fut__sys_writev(int fd, const struct iovec *iov, int iovcnt);
/* writev for sockets: sendmsg with MSG_NOSIGNAL (counted as WRITEV). */
ssize_t fut__sys_sendv(int fd, const struct iovec *iov, int iovcnt);
ssize_t fut__sys_recv(int fd, void *buf, size_t len, int flags);
ssize_t fut__sys_send(int fd, const void *buf, size_t len, int flags);
ssize_t fut__sys_recvfrom(int fd, void *buf, size_t len, int flags,
                          struct sockaddr *addr, socklen_t *alen);
ssize_t fut__sys_sendto(int fd, const void *buf, size_t len, int flags,
                        const struct sockaddr *addr, socklen_t alen);
int fut__sys_accept(int fd, struct sockaddr *addr, socklen_t *alen);
int fut__sys_connect(int fd, const struct sockaddr *addr, socklen_t alen);
/* Non-blocking, close-on-exec. */
int fut__sys_socket(int domain, int type, int proto);
int fut__sys_socketpair(int domain, int type, int proto, int sv[2]);
int fut__sys_bind(int fd, const struct sockaddr *addr, socklen_t alen);
int fut__sys_listen(int fd, int backlog);
int fut__sys_shutdown(int fd, int how);
int fut__sys_setsockopt(int fd, int level, int name, const void *val,
                        socklen_t len);
int fut__sys_getsockopt(int fd, int level, int name, void *val,
                        socklen_t *len);
int fut__sys_getsockname(int fd, struct sockaddr *addr, socklen_t *alen,
                         int peer);
int fut__sys_close(int fd);
/* fcntl(F_GETFL) when 'setfl' < 0, else fcntl(F_SETFL, setfl). */
int fut__sys_fcntl_fl(int fd, int setfl);
/* Non-blocking, close-on-exec. */
int fut__sys_pipe(int fds[2]);
int fut__sys_epoll_create(void);
int fut__sys_epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev);
/* 'timeout_ns' < 0: forever. epoll_pwait2 (nanoseconds) when the kernel
 * has it (Linux 5.11), else epoll_wait with the timeout rounded up to
 * milliseconds (never early). */
int fut__sys_epoll_wait(int epfd, struct epoll_event *evs, int max,
                        int64_t timeout_ns);
/* Non-blocking, close-on-exec eventfd with initial value 0. */
int fut__sys_eventfd(void);
/* Adds 1 to eventfd 'fd' (a wake); a counter saturated because nobody
 * reads it (watchers are edge-triggered) is reset first. */
void fut__sys_eventfd_signal(int fd);
/* futex(2), private to the process, on the 32-bit word at 'word': sleeps
 * while the word holds 'val', at most 'timeout_ns' (< 0: no limit).
 * Returns on a wake, the timeout, a signal, or at once when the word
 * differs: every caller re-reads its state, so the reason is not given. */
void fut__sys_futex_wait(uint32_t *word, uint32_t val, int64_t timeout_ns);
/* Wakes at most 'n' sleepers of fut__sys_futex_wait on 'word'. */
void fut__sys_futex_wake(uint32_t *word, int n);
int fut__sys_signalfd(const sigset_t *mask);
int fut__sys_open(const char *path, int flags, int mode);
ssize_t fut__sys_pread(int fd, void *buf, size_t len, off_t off);
ssize_t fut__sys_pwrite(int fd, const void *buf, size_t len, off_t off);
int fut__sys_fstat(int fd, struct stat *st);
int fut__sys_fsync(int fd);
/* getaddrinfo with its EAI_* code mapped to a -errno value (see
 * fut_getaddrinfo in net.h for the table). */
int fut__sys_getaddrinfo(const char *host, const char *serv,
                         const struct addrinfo *hints, struct addrinfo **res);

#endif /* FUT_PLATFORM_SYS_H */
