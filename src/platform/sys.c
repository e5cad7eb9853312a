/* SPDX-License-Identifier: MIT */
/* The syscall shim and its fault injector (see sys.h).
 *
 * Rules of the injector:
 *   - 'fut__sys_armed' is nonzero while a rule is installed or counting is
 *     on; it is only a fast-path hint (relaxed): a call racing a change of
 *     the rules may go either way, which is why tests change rules while
 *     the calls they target are not in flight;
 *   - the rule table and the counters are read and written under 'lock';
 *   - a rule's 'skip' and 'count' are consumed in call order, so the same
 *     test makes the same calls fail every time;
 *   - the after-call hook is read under 'lock' and run outside it.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <limits.h>
#include <pthread.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "platform/simfault.h"
#include "platform/sys.h"
#include "util/atomic.h"

#define MAX_RULES 16

fut__aword fut__sys_armed;
fut__aword fut__sys_net;
_Thread_local int fut__sys_shortened;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct fut__sys_fault rules[MAX_RULES];
static int nrules;
static int counting;
static long calls[FUT__SYS_NOPS];
static long injected;

void (*fut__sys_hook)(int, int, long, void *);
static int hook_op;
static void *hook_ud;

static void rearm(void)
{
    /* A simulation with faults on needs the slow path too (simfault.h). */
    fut__store(&fut__sys_armed,
               nrules > 0 || counting || fut__sys_hook ||
                   fut__load(&fut__simfault_users, FUT__RELAXED) != 0,
               FUT__RELAXED);
}

void fut__simfault_count(int delta)
{
    /* Relaxed: a hint (simfault.h); the fault state is thread-local. */
    fut__fetch_add(&fut__simfault_users, (uintptr_t)(intptr_t)delta,
                   FUT__RELAXED);
    pthread_mutex_lock(&lock);
    rearm();
    pthread_mutex_unlock(&lock);
}

/* A simulation's seeded fault for this call (simfault.h): 1 with '*res'
 * set when it fails. EINTR only where the caller retries it (the file
 * reads and writes of src/blocking/fs.c); file errors on the file calls,
 * which one chosen by the fault generator. */
static int sim_fault(int op, long *res)
{
    static const int open_errs[] = {-ENOENT, -EACCES, -EMFILE};
    static const int read_errs[] = {-EIO, -EAGAIN};
    static const int write_errs[] = {-EIO, -ENOSPC, -EAGAIN};
    const int *errs = NULL;
    uint64_t n = 1;
    switch (op) {
    case FUT__SYS_PREAD:
    case FUT__SYS_PWRITE:
        if (fut__simfault_hit(FUT__SIMFAULT_EINTR)) {
            *res = -EINTR;
            return 1;
        }
        errs = op == FUT__SYS_PREAD ? read_errs : write_errs;
        n = op == FUT__SYS_PREAD ? 2 : 3;
        break;
    case FUT__SYS_OPEN:
        errs = open_errs;
        n = 3;
        break;
    case FUT__SYS_FSTAT:
    case FUT__SYS_FSYNC:
        errs = read_errs; /* EIO */
        break;
    default:
        return 0;
    }
    if (!fut__simfault_hit(FUT__SIMFAULT_FS))
        return 0;
    *res = errs[fut__simrng_below(&fut__tls_simfault->rng, n)];
    return 1;
}

void fut__sys_set_hook(int op, void (*fn)(int, int, long, void *), void *ud)
{
    pthread_mutex_lock(&lock);
    fut__sys_hook = fn;
    hook_op = op;
    hook_ud = ud;
    rearm();
    pthread_mutex_unlock(&lock);
}

void fut__sys_after(int op, int fd, long res)
{
    pthread_mutex_lock(&lock);
    void (*fn)(int, int, long, void *) = fut__sys_hook;
    void *ud = hook_ud;
    int match = hook_op == FUT__SYS_ANY || hook_op == op;
    pthread_mutex_unlock(&lock);
    if (fn && match)
        fn(op, fd, res, ud); /* outside the lock: it may make calls */
}

int fut__sys_inject(const struct fut__sys_fault *f)
{
    if (!f || f->op < FUT__SYS_ANY || f->op >= FUT__SYS_NOPS || f->err > 0 ||
        (f->err == 0 && f->max_len == 0))
        return FUT_EINVAL;
    pthread_mutex_lock(&lock);
    if (nrules == MAX_RULES) {
        pthread_mutex_unlock(&lock);
        return FUT_EFULL;
    }
    rules[nrules++] = *f;
    rearm();
    pthread_mutex_unlock(&lock);
    return 0;
}

void fut__sys_reset(void)
{
    pthread_mutex_lock(&lock);
    fut__sys_hook = NULL;
    nrules = 0;
    counting = 0;
    memset(calls, 0, sizeof calls);
    injected = 0;
    rearm();
    pthread_mutex_unlock(&lock);
}

void fut__sys_count_calls(int on)
{
    pthread_mutex_lock(&lock);
    counting = on;
    rearm();
    pthread_mutex_unlock(&lock);
}

long fut__sys_calls(int op)
{
    long n = 0;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < FUT__SYS_NOPS; i++)
        if (op == FUT__SYS_ANY || op == i)
            n += calls[i];
    pthread_mutex_unlock(&lock);
    return n;
}

long fut__sys_injected(void)
{
    pthread_mutex_lock(&lock);
    long n = injected;
    pthread_mutex_unlock(&lock);
    return n;
}

/* Removes spent rules (count reached 0). */
static void compact(void)
{
    int j = 0;
    for (int i = 0; i < nrules; i++)
        if (rules[i].count != 0)
            rules[j++] = rules[i];
    nrules = j;
    rearm();
}

int fut__sys_intercept(int op, int fd, size_t *len, long *res)
{
    int fail = 0;
    fut__sys_shortened = 0;
    if (FUT_UNLIKELY(fut__tls_simfault) && sim_fault(op, res))
        return 1;
    pthread_mutex_lock(&lock);
    if (counting)
        calls[op]++;
    for (int i = 0; i < nrules; i++) {
        struct fut__sys_fault *r = &rules[i];
        if ((r->op != FUT__SYS_ANY && r->op != op) ||
            (r->fd != -1 && r->fd != fd))
            continue;
        if (r->skip > 0) {
            r->skip--;
            continue;
        }
        if (r->err < 0) {
            *res = r->err;
            fail = 1;
        } else if (len && *len > r->max_len) {
            *len = r->max_len;
            fut__sys_shortened = 1;
        } else {
            continue; /* nothing to shorten: not acted on */
        }
        injected++;
        if (r->count > 0 && --r->count == 0)
            compact();
        break;
    }
    pthread_mutex_unlock(&lock);
    return fail;
}

/* ------------------------------------------------------------ wrappers */

#define RET(x) return (x) < 0 ? -errno : (x)

/* The simulated network's turn (sys.h): returns from the wrapper with
 * its result when the call is the simulation's. */
#define NET(...)                                                             \
    do {                                                                     \
        uintptr_t h_ = fut__load(&fut__sys_net, FUT__RELAXED);               \
        if (FUT_UNLIKELY(h_ != 0)) {                                         \
            struct fut__sys_netcall c_ = {__VA_ARGS__};                      \
            long res_;                                                       \
            if (((fut__sys_net_fn)h_)(&c_, &res_))                           \
                return (int)res_;                                            \
        }                                                                    \
    } while (0)

ssize_t fut__sys_read(int fd, void *buf, size_t len)
{
    FUT__SYS_ENTER(FUT__SYS_READ, fd, &len);
    ssize_t n = read(fd, buf, len);
    n = n < 0 ? -errno : n;
    if (FUT_UNLIKELY(fut__load(&fut__sys_armed, FUT__RELAXED)))
        fut__sys_after(FUT__SYS_READ, fd, n);
    return n;
}

ssize_t fut__sys_write(int fd, const void *buf, size_t len)
{
    FUT__SYS_ENTER(FUT__SYS_WRITE, fd, &len);
    ssize_t n = write(fd, buf, len);
    RET(n);
}

/* writev or sendmsg(MSG_NOSIGNAL) of 'iov', cut to 'cut' bytes. */
static ssize_t do_writev(int fd, const struct iovec *iov, int iovcnt,
                         int sock)
{
    if (sock) {
        struct msghdr m;
        memset(&m, 0, sizeof m);
        m.msg_iov = (struct iovec *)iov;
        m.msg_iovlen = (size_t)iovcnt;
        ssize_t n = sendmsg(fd, &m, MSG_NOSIGNAL);
        RET(n);
    }
    ssize_t n = writev(fd, iov, iovcnt);
    RET(n);
}

static ssize_t writev_common(int fd, const struct iovec *iov, int iovcnt,
                             int sock)
{
    if (FUT_UNLIKELY(fut__load(&fut__sys_armed, FUT__RELAXED))) {
        size_t total = 0;
        for (int i = 0; i < iovcnt; i++)
            total += iov[i].iov_len;
        size_t cut = total;
        long res;
        if (fut__sys_intercept(FUT__SYS_WRITEV, fd, &cut, &res))
            return res;
        if (cut < total) {
            /* A short writev: write the first 'cut' bytes only. */
            struct iovec v[64];
            int n = 0;
            for (int i = 0; i < iovcnt && n < 64 && cut > 0; i++, n++) {
                v[n] = iov[i];
                if (v[n].iov_len > cut)
                    v[n].iov_len = cut;
                cut -= v[n].iov_len;
            }
            return do_writev(fd, v, n, sock);
        }
    }
    return do_writev(fd, iov, iovcnt, sock);
}

ssize_t fut__sys_writev(int fd, const struct iovec *iov, int iovcnt)
{
    return writev_common(fd, iov, iovcnt, 0);
}

ssize_t fut__sys_sendv(int fd, const struct iovec *iov, int iovcnt)
{
    return writev_common(fd, iov, iovcnt, 1);
}

ssize_t fut__sys_recv(int fd, void *buf, size_t len, int flags)
{
    FUT__SYS_ENTER(FUT__SYS_RECV, fd, &len);
    ssize_t n = recv(fd, buf, len, flags);
    n = n < 0 ? -errno : n;
    if (FUT_UNLIKELY(fut__load(&fut__sys_armed, FUT__RELAXED)))
        fut__sys_after(FUT__SYS_RECV, fd, n);
    return n;
}

ssize_t fut__sys_send(int fd, const void *buf, size_t len, int flags)
{
    FUT__SYS_ENTER(FUT__SYS_SEND, fd, &len);
    ssize_t n = send(fd, buf, len, flags | MSG_NOSIGNAL);
    RET(n);
}

ssize_t fut__sys_recvfrom(int fd, void *buf, size_t len, int flags,
                          struct sockaddr *addr, socklen_t *alen)
{
    FUT__SYS_ENTER(FUT__SYS_RECVFROM, fd, &len);
    ssize_t n = recvfrom(fd, buf, len, flags, addr, alen);
    RET(n);
}

ssize_t fut__sys_sendto(int fd, const void *buf, size_t len, int flags,
                        const struct sockaddr *addr, socklen_t alen)
{
    FUT__SYS_ENTER(FUT__SYS_SENDTO, fd, &len);
    ssize_t n = sendto(fd, buf, len, flags | MSG_NOSIGNAL, addr, alen);
    RET(n);
}

int fut__sys_accept(int fd, struct sockaddr *addr, socklen_t *alen)
{
    FUT__SYS_ENTER(FUT__SYS_ACCEPT, fd, NULL);
    int r = accept4(fd, addr, alen, SOCK_NONBLOCK | SOCK_CLOEXEC);
    RET(r);
}

int fut__sys_connect(int fd, const struct sockaddr *addr, socklen_t alen)
{
    FUT__SYS_ENTER(FUT__SYS_CONNECT, fd, NULL);
    NET(.op = FUT__SYS_CONNECT, .fd = fd, .in = addr, .len = alen);
    int r = connect(fd, addr, alen);
    RET(r);
}

int fut__sys_socket(int domain, int type, int proto)
{
    FUT__SYS_ENTER(FUT__SYS_SOCKET, -1, NULL);
    NET(.op = FUT__SYS_SOCKET, .fd = -1, .a = domain, .b = type);
    int r = socket(domain, type | SOCK_NONBLOCK | SOCK_CLOEXEC, proto);
    RET(r);
}

int fut__sys_socketpair(int domain, int type, int proto, int sv[2])
{
    FUT__SYS_ENTER(FUT__SYS_SOCKETPAIR, -1, NULL);
    NET(.op = FUT__SYS_SOCKETPAIR, .fd = -1, .a = domain, .b = type,
        .out = sv);
    int r =
        socketpair(domain, type | SOCK_NONBLOCK | SOCK_CLOEXEC, proto, sv);
    RET(r);
}

int fut__sys_bind(int fd, const struct sockaddr *addr, socklen_t alen)
{
    FUT__SYS_ENTER(FUT__SYS_BIND, fd, NULL);
    NET(.op = FUT__SYS_BIND, .fd = fd, .in = addr, .len = alen);
    int r = bind(fd, addr, alen);
    RET(r);
}

int fut__sys_listen(int fd, int backlog)
{
    FUT__SYS_ENTER(FUT__SYS_LISTEN, fd, NULL);
    NET(.op = FUT__SYS_LISTEN, .fd = fd, .a = backlog);
    int r = listen(fd, backlog);
    RET(r);
}

int fut__sys_shutdown(int fd, int how)
{
    FUT__SYS_ENTER(FUT__SYS_SHUTDOWN, fd, NULL);
    NET(.op = FUT__SYS_SHUTDOWN, .fd = fd, .a = how);
    int r = shutdown(fd, how);
    RET(r);
}

int fut__sys_setsockopt(int fd, int level, int name, const void *val,
                        socklen_t len)
{
    FUT__SYS_ENTER(FUT__SYS_SETSOCKOPT, fd, NULL);
    NET(.op = FUT__SYS_SETSOCKOPT, .fd = fd, .a = level, .b = name, .in = val,
        .len = len);
    int r = setsockopt(fd, level, name, val, len);
    RET(r);
}

int fut__sys_getsockopt(int fd, int level, int name, void *val,
                        socklen_t *len)
{
    FUT__SYS_ENTER(FUT__SYS_GETSOCKOPT, fd, NULL);
    NET(.op = FUT__SYS_GETSOCKOPT, .fd = fd, .a = level, .b = name,
        .out = val, .lenp = len);
    int r = getsockopt(fd, level, name, val, len);
    RET(r);
}

int fut__sys_getsockname(int fd, struct sockaddr *addr, socklen_t *alen,
                         int peer)
{
    FUT__SYS_ENTER(FUT__SYS_GETSOCKNAME, fd, NULL);
    NET(.op = FUT__SYS_GETSOCKNAME, .fd = fd, .a = peer, .out = addr,
        .lenp = alen);
    int r = peer ? getpeername(fd, addr, alen) : getsockname(fd, addr, alen);
    RET(r);
}

int fut__sys_close(int fd)
{
    FUT__SYS_ENTER(FUT__SYS_CLOSE, fd, NULL);
    NET(.op = FUT__SYS_CLOSE, .fd = fd);
    /* Linux releases the fd even when close reports EINTR: never retry. */
    int r = close(fd);
    RET(r);
}

int fut__sys_fcntl_fl(int fd, int setfl)
{
    FUT__SYS_ENTER(FUT__SYS_FCNTL, fd, NULL);
    int r = setfl < 0 ? fcntl(fd, F_GETFL) : fcntl(fd, F_SETFL, setfl);
    RET(r);
}

int fut__sys_pipe(int fds[2])
{
    FUT__SYS_ENTER(FUT__SYS_PIPE, -1, NULL);
    int r = pipe2(fds, O_NONBLOCK | O_CLOEXEC);
    RET(r);
}

int fut__sys_epoll_create(void)
{
    FUT__SYS_ENTER(FUT__SYS_EPOLL_CREATE, -1, NULL);
    int r = epoll_create1(EPOLL_CLOEXEC);
    RET(r);
}

int fut__sys_epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev)
{
    FUT__SYS_ENTER(FUT__SYS_EPOLL_CTL, fd, NULL);
    int r = epoll_ctl(epfd, op, fd, ev);
    RET(r);
}

/* 1 while epoll_pwait2 may exist; cleared for good at its first ENOSYS
 * (relaxed: every thread finds the same answer, a stale 1 costs one more
 * ENOSYS). */
static fut__aword have_pwait2 = 1;

static int epoll_wait_ns(int epfd, struct epoll_event *evs, int max,
                         int64_t timeout_ns)
{
#ifdef SYS_epoll_pwait2
    if (timeout_ns > 0 && fut__load(&have_pwait2, FUT__RELAXED)) {
        struct timespec ts = {(time_t)(timeout_ns / 1000000000),
                              (long)(timeout_ns % 1000000000)};
        long r = syscall(SYS_epoll_pwait2, epfd, evs, max, &ts, NULL, 0);
        if (r >= 0 || errno != ENOSYS)
            return (int)r;
        fut__store(&have_pwait2, 0, FUT__RELAXED);
    }
#endif
    int64_t ms = timeout_ns < 0 ? -1 : (timeout_ns + 999999) / 1000000;
    return epoll_wait(epfd, evs, max, ms > INT_MAX ? INT_MAX : (int)ms);
}

int fut__sys_epoll_wait(int epfd, struct epoll_event *evs, int max,
                        int64_t timeout_ns)
{
    FUT__SYS_ENTER(FUT__SYS_EPOLL_WAIT, epfd, NULL);
    int r = epoll_wait_ns(epfd, evs, max, timeout_ns);
    RET(r);
}

int fut__sys_eventfd(void)
{
    FUT__SYS_ENTER(FUT__SYS_EVENTFD, -1, NULL);
    int r = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    RET(r);
}

void fut__sys_eventfd_signal(int fd)
{
    uint64_t one = 1;
    if (fut__sys_write(fd, &one, sizeof one) == -EAGAIN) {
        uint64_t v;
        fut__sys_read(fd, &v, sizeof v);
        fut__sys_write(fd, &one, sizeof one);
    }
}

void fut__sys_futex_wait(uint32_t *word, uint32_t val, int64_t timeout_ns)
{
    struct timespec ts, *tp = NULL;
    if (timeout_ns >= 0) {
        ts.tv_sec = timeout_ns / 1000000000;
        ts.tv_nsec = timeout_ns % 1000000000;
        tp = &ts;
    }
    syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, val, tp, NULL, 0);
}

void fut__sys_futex_wake(uint32_t *word, int n)
{
    syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
}

int fut__sys_signalfd(const sigset_t *mask)
{
    FUT__SYS_ENTER(FUT__SYS_SIGNALFD, -1, NULL);
    int r = signalfd(-1, mask, SFD_NONBLOCK | SFD_CLOEXEC);
    RET(r);
}

int fut__sys_open(const char *path, int flags, int mode)
{
    FUT__SYS_ENTER(FUT__SYS_OPEN, -1, NULL);
    int r = open(path, flags | O_CLOEXEC, mode);
    RET(r);
}

ssize_t fut__sys_pread(int fd, void *buf, size_t len, off_t off)
{
    FUT__SYS_ENTER(FUT__SYS_PREAD, fd, &len);
    ssize_t n = off < 0 ? read(fd, buf, len) : pread(fd, buf, len, off);
    RET(n);
}

ssize_t fut__sys_pwrite(int fd, const void *buf, size_t len, off_t off)
{
    FUT__SYS_ENTER(FUT__SYS_PWRITE, fd, &len);
    ssize_t n = off < 0 ? write(fd, buf, len) : pwrite(fd, buf, len, off);
    RET(n);
}

int fut__sys_fstat(int fd, struct stat *st)
{
    FUT__SYS_ENTER(FUT__SYS_FSTAT, fd, NULL);
    int r = fstat(fd, st);
    RET(r);
}

int fut__sys_fsync(int fd)
{
    FUT__SYS_ENTER(FUT__SYS_FSYNC, fd, NULL);
    int r = fsync(fd);
    RET(r);
}

int fut__sys_getaddrinfo(const char *host, const char *serv,
                         const struct addrinfo *hints, struct addrinfo **res)
{
    FUT__SYS_ENTER(FUT__SYS_GETADDRINFO, -1, NULL);
    int r = getaddrinfo(host, serv, hints, res);
    switch (r) {
    case 0:
        return 0;
    case EAI_SYSTEM:
        return -errno;
    case EAI_AGAIN:
        return -EAGAIN;
    case EAI_MEMORY:
        return -ENOMEM;
    case EAI_NONAME:
        return -ENOENT;
#ifdef EAI_NODATA
    case EAI_NODATA:
        return -ENODATA;
#endif
#ifdef EAI_ADDRFAMILY
    case EAI_ADDRFAMILY:
        return -EADDRNOTAVAIL;
#endif
    case EAI_FAMILY:
        return -EAFNOSUPPORT;
    case EAI_SOCKTYPE:
        return -ESOCKTNOSUPPORT;
    case EAI_SERVICE:
        return -ESRCH;
    case EAI_BADFLAGS:
        return -EINVAL;
    default:
        return -EIO; /* EAI_FAIL and anything newer */
    }
}
