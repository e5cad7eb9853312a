/* The readiness backend: the one place that knows the OS's event API.
 * Four functions that *translate* (Redis aeApiPoll, libdill pollset): the
 * backend never dispatches; the driver (driver.c) decides what a fired
 * event means. The build picks the file (backend_epoll.c on Linux).
 *
 * Every fd is registered once, edge-triggered, for both directions: no
 * epoll_ctl per operation (the reactor tracks readiness itself).
 */
#ifndef FUT_IO_BACKEND_H
#define FUT_IO_BACKEND_H

#include <stdint.h>

/* Readiness bits, as the backend reports them and the reactor stores
 * them in an fd's readiness word. */
#define FUT__RD_READ 0x01u    /* readable (or a connection to accept) */
#define FUT__RD_WRITE 0x02u   /* writable (or a connect finished) */
#define FUT__RD_RCLOSED 0x04u /* the peer will send nothing more */
#define FUT__RD_WCLOSED 0x08u /* writes will fail (hang-up) */
#define FUT__RD_ERROR 0x10u   /* a pending socket error */
#define FUT__RD_ALL 0x1fu

/* Each backend file defines its own state; the driver holds a pointer. */
struct fut__backend;

/* One fired event: the token given at registration (NULL = the driver's
 * own wake-up fd) and what became ready. */
struct fut__bevent {
    void *token;
    unsigned ready; /* FUT__RD_* */
};

/* Creates the backend into '*out'. Returns 0 or a negative error
 * (FUT_ENOMEM, -EMFILE, ...); nothing is left open on error. */
int fut__backend_init(struct fut__backend **out);
void fut__backend_term(struct fut__backend *b);
/* Registers 'fd' (token = what wait reports for it) for both directions,
 * edge-triggered, when 'on'; unregisters it when not. Returns 0 or a
 * negative error. */
int fut__backend_update(struct fut__backend *b, int fd, void *token, int on);
/* Waits up to 'timeout_ns' (< 0 = forever, 0 = poll; nanosecond precision
 * where the kernel has epoll_pwait2, else rounded up to milliseconds) and
 * fills at most 'max' events. Returns their number (0 on timeout or
 * EINTR) or a negative error. */
int fut__backend_wait(struct fut__backend *b, int64_t timeout_ns,
                      struct fut__bevent *fired, int max);

#endif /* FUT_IO_BACKEND_H */
