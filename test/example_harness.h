/* SPDX-License-Identifier: MIT */
/* Harness for the tests of the example servers (test/example_http.c,
 * test/example_echo.c): starts a built example as a child process on an
 * ephemeral port (it is given port 0 and prints the port it bound on
 * stderr), talks to it over loopback with plain blocking sockets, reads
 * its RSS from /proc, and stops it with SIGTERM. Every wait is bounded;
 * a failure fails the Check test case (and kills the child). */
#ifndef FUT_EXAMPLE_HARNESS_H
#define FUT_EXAMPLE_HARNESS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct ex_server {
    pid_t pid;  /* the child */
    int port;   /* the port it listens on */
    int err_fd; /* read end of its stderr */
    const char *name;
};

/* Starts 'bin' with the arguments 'args' (NULL-terminated; may be NULL),
 * then "--workers 2" when the case runs as .mt (FUT_TEST_RT=mt), then the
 * port 0, and waits (10 s) for the line "...listening on ADDR:PORT ..." on
 * its stderr. 'env' (may be NULL): "NAME=value" strings added to the
 * child's environment. */
void ex_start(struct ex_server *s, const char *bin, const char *const *args,
              const char *const *env);

/* Sends SIGTERM and waits up to 'timeout_ms' for the exit, copying the
 * child's stderr to ours meanwhile (sanitizer reports show up in the test
 * log). Returns the exit status, 128 + signal when killed by one, or -1
 * after a timeout (the child is then killed). */
int ex_stop(struct ex_server *s, int timeout_ms);

/* The server 'bin' on io_uring with faults injected into its completions
 * (FUT_URING_FAULTS): 60 keep-alive connections do 10 lockstep rounds of
 * 'req' -> 'reply'; the ones a fault breaks must close within 5 s, the
 * others get every reply (at least 10 of them), some fault must have
 * broken one, and the server exits 0 on SIGTERM. */
void ex_uring_faults(const char *bin, const char *req, size_t req_len,
                     const char *reply, size_t reply_len);

/* The child's VmRSS in KiB. */
long ex_rss_kib(const struct ex_server *s);

/* Milliseconds on the monotonic clock. */
int64_t ex_now_ms(void);
/* Microseconds on the monotonic clock. */
int64_t ex_now_us(void);

/* A blocking TCP connection to 127.0.0.1:port with TCP_NODELAY and a
 * receive timeout of 'timeout_ms' (recv gives EAGAIN after it). */
int ex_connect(int port, int timeout_ms);
/* Sends all 'n' bytes (fails the test on error). */
void ex_send_all(int fd, const void *buf, size_t n);
/* Reads until 'n' bytes arrived, EOF, an error or 'timeout_ms' passed.
 * Returns the byte count; '*eof' (may be NULL) = 1 on EOF, -1 on an error
 * (a reset), 0 otherwise. */
size_t ex_recv_n(int fd, char *buf, size_t n, int timeout_ms, int *eof);
/* Waits up to 'timeout_ms' for EOF (or a reset), dropping what comes.
 * Returns the ms it took, or -1 on timeout. */
int64_t ex_wait_eof(int fd, int timeout_ms);
/* Closes 'fd' with a reset (SO_LINGER 0). */
void ex_reset(int fd);

/* How much more memory a sanitizer build's process takes than the plain
 * build's, for bounds on RSS (measured per idle connection: ASan 1.2-1.4x,
 * its shadow is 1/8 of the memory plus redzones; TSan 4.4-4.8x, its
 * shadow is several times the memory touched). Percent. */
#if defined(FUT_TEST_TSAN)
#define EX_RSS_PERCENT 500
#elif defined(FUT_TEST_ASAN)
#define EX_RSS_PERCENT 150
#else
#define EX_RSS_PERCENT 100
#endif

/* Opens 'n' connections one after the other, each first passing 'probe'
 * (a request and its answer: sends 'req', reads 'resp_len' bytes) so the
 * server holds an idle connection that has served once; returns the
 * server's RSS growth per connection in bytes (measured after the RSS
 * stood still), and closes them. Prints the figures. */
long ex_idle_rss_per_conn(struct ex_server *s, int n, const char *req,
                          size_t req_len, size_t resp_len);

#endif /* FUT_EXAMPLE_HARNESS_H */
