/* SPDX-License-Identifier: MIT */
/* Internals shared by the files of src/scope and the task dump
 * (src/scope/dump.c). The rules of every field are in scope.c's rules block. */
#ifndef FUT_SCOPE_INTERNAL_H
#define FUT_SCOPE_INTERNAL_H

#include "fut/scope.h"
#include "sync/sync_internal.h"

struct fut_task;

/* The private part of struct fut_scope. */
struct fut__scope_core {
    struct fut__lock lock;     /* guards everything below but the awords */
    struct fut__list live;     /* children running (fut__scope_child.link) */
    struct fut__list finished; /* records not consumed yet */
    struct fut_waker waker;    /* the owner's (join, next) */
    struct fut_runtime *rt;    /* where children are spawned */
    uint64_t outstanding;      /* linked, not consumed */
    uint64_t nfinished;        /* records on 'finished' */
    int policy;                /* enum fut_scope_policy */
    int cancelled;             /* no more spawns; children aborted */
    int user_cancel;           /* fut_scope_cancel was called */
    int first_error;           /* the first failing child's result */
    fut__aword closed;         /* mirrors 'cancelled' (lock-free hint) */
    fut__aword owner;          /* task last seen polling the scope (dump) */
};

/* The future of a child task: this header, then the user's future at
 * FUT__SCOPE_CHILD_HDR. */
struct fut__scope_child {
    struct fut_future base;
    fut__aword st;         /* 0 / BUSY / DONE (scope.c) */
    struct fut__list link; /* in live or finished (scope lock) */
    struct fut_scope *scope;
    struct fut_task *task;          /* set by the spawner (scope lock) */
    struct fut__scope_child *cnext; /* a canceller's private list */
    intptr_t tag;                   /* opts */
    intptr_t value;                 /* copied from the child at READY */
    int *result_dst;
    void *out_dst;
    uint32_t result_off, value_off, out_off, out_len;
    int result;        /* the record (scope lock) */
    uint8_t linked;    /* on a list of the scope (scope lock) */
    uint8_t early;     /* finished before it was linked */
    uint8_t completed; /* ran to completion (vs dropped) */
    uint8_t cqueued;   /* taken by a canceller once */
};

#define FUT__SCOPE_CHILD_HDR                                                 \
    ((sizeof(struct fut__scope_child) + _Alignof(max_align_t) - 1) &         \
     ~(_Alignof(max_align_t) - 1))

extern const struct fut_future_vtable fut__scope_child_vt;

/* For dumps: the scope of a child wrapper (NULL when 'f' is not one);
 * '*done' = its inner future is gone. Racy reads, see dump.c. */
struct fut_scope *fut__scope_of_child(struct fut_future *f, int *done);
/* The task last seen polling 's' (its join or next), or NULL. */
struct fut_task *fut__scope_owner(struct fut_scope *s);

/* When 'f' is a scope future: writes a one-line summary (under the
 * scope's lock) and returns 1; else 0. */
int fut__scope_describe(struct fut_future *f, char *buf, size_t len);

/* The task dump's hook for futures a higher layer knows (dump.c): writes
 * a description of 'f' into 'buf' and returns 1, or returns 0. */
typedef int (*fut__dump_describe_fn)(struct fut_future *f, char *buf,
                                     size_t len);
extern fut__aword fut__dump_describe_hook;

#endif /* FUT_SCOPE_INTERNAL_H */
