/* SPDX-License-Identifier: MIT */
/* cmdline.h: the example programs' command-line helpers, so that every
 * one of them answers alike: --help (or -h) prints the usage on stdout
 * and exits 0; a bad argument (an unknown option, a missing or bad value,
 * an extra argument) is named on stderr, followed by the usage, and the
 * program exits 2 before it opens anything. Numbers are read whole with
 * strtol / strtod: "12x", "", " 1" and out-of-range values are refused.
 * Header-only (static inline): each example is one program of its own. */
#ifndef FUT_EXAMPLES_CMDLINE_H
#define FUT_EXAMPLES_CMDLINE_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* 1 for "--help" and "-h". */
static inline int ex_is_help(const char *arg)
{
    return !strcmp(arg, "--help") || !strcmp(arg, "-h");
}

/* Says what was wrong with the command line ("prog: what 'arg'"); -1. */
static inline int ex_bad(const char *prog, const char *what, const char *arg)
{
    fprintf(stderr, "%s: %s '%s'\n", prog, what, arg);
    return -1;
}

/* The usage: on stdout for --help (returns 0), on stderr after a bad
 * argument (returns 2). */
static inline int ex_usage(int help, const char *usage)
{
    fputs(usage, help ? stdout : stderr);
    return help ? 0 : 2;
}

/* The value of the option argv[*i]: the next argument (*i moves on to
 * it), or NULL (said: missing). */
static inline const char *ex_value(const char *prog, int argc, char **argv,
                                   int *i)
{
    if (*i + 1 >= argc)
        return ex_bad(prog, "missing value for", argv[*i]), NULL;
    return argv[++*i];
}

/* A decimal integer in [lo, hi] for 'name': 1 and *out, or 0 (said). */
static inline int ex_long(const char *prog, const char *name, const char *s,
                          long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (end == s || *end || errno || v < lo || v > hi ||
        !(*s == '-' || (*s >= '0' && *s <= '9'))) {
        fprintf(stderr, "%s: bad %s '%s' (an integer from %ld to %ld)\n",
                prog, name, s, lo, hi);
        return 0;
    }
    *out = v;
    return 1;
}

/* A time in seconds, > 0 and < 10^6, for 'name': 1 and *ns, or 0
 * (said). */
static inline int ex_secs(const char *prog, const char *name, const char *s,
                          int64_t *ns)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end || errno || !(v > 0 && v < 1e6)) {
        fprintf(stderr, "%s: bad %s '%s' (seconds, > 0)\n", prog, name, s);
        return 0;
    }
    *ns = (int64_t)(v * 1e9);
    return 1;
}

/* The arguments every server example takes, at argv[*i]: --workers N
 * (0 to 256; *i moves on to N) and PORT (0 to 65535, given once); any
 * other argument starting with '-' is an unknown option. 0, or -1 (a bad
 * argument, said). */
static inline int ex_server_arg(const char *prog, int argc, char **argv,
                                int *i, int *workers, int *port)
{
    const char *a = argv[*i], *v;
    long n;
    if (!strcmp(a, "--workers")) {
        if (!(v = ex_value(prog, argc, argv, i)) ||
            !ex_long(prog, "--workers", v, 0, 256, &n))
            return -1;
        *workers = (int)n;
        return 0;
    }
    if (a[0] == '-' && a[1])
        return ex_bad(prog, "unknown option", a);
    if (*port >= 0)
        return ex_bad(prog, "extra argument", a);
    if (!ex_long(prog, "PORT", a, 0, 65535, &n))
        return -1;
    *port = (int)n;
    return 0;
}

/* A server example's whole command line, [--workers N] PORT: 0, 1
 * (--help or -h) or -1 (a bad argument, said). */
static inline int ex_server_args(const char *prog, int argc, char **argv,
                                 int *workers, int *port)
{
    for (int i = 1; i < argc; i++) {
        if (ex_is_help(argv[i]))
            return 1;
        if (ex_server_arg(prog, argc, argv, &i, workers, port) < 0)
            return -1;
    }
    return *port < 0 ? ex_bad(prog, "missing", "PORT") : 0;
}

#endif /* FUT_EXAMPLES_CMDLINE_H */
