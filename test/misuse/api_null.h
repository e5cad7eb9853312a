/* SPDX-License-Identifier: MIT */
/* test_api_misuse: what the generated table of NULL-argument cases
 * (gen_api_null.py) and the test driver share. */
#ifndef FUT_TEST_API_NULL_H
#define FUT_TEST_API_NULL_H

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <netdb.h>

#include "fut.h"

enum api_class {
    API_ERR,   /* returns an error code: must be negative */
    API_NOERR, /* returns a value that is not an error code */
    API_VOID,  /* returns nothing */
    API_VALUE  /* returns a pointer or a struct */
};

struct api_case {
    const char *fn;  /* the function */
    const char *arg; /* the argument that is NULL */
    enum api_class cls;
    long (*call)(void);
};

extern const struct api_case api_cases[];
extern const int api_ncases;

/* Zeroed, aligned blocks that stand in for the other pointer arguments
 * (one per argument position: never the same block twice in a call). */
#define API_BLANK_SIZE 65536
extern unsigned char blank[12][API_BLANK_SIZE];
void stub_fn(void);

#endif
