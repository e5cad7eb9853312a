/* SPDX-License-Identifier: MIT */
/* Intrusive circular doubly-linked lists (libuv's uv__queue, tokio's
 * intrusive LinkedList): the link lives inside the object on the list, so
 * putting an object on a list or taking it off never allocates, and
 * removing any node is O(1).
 *
 * A list is a sentinel 'struct fut__list' whose next/prev point to itself
 * when empty. An unlinked node also points to itself (fut__list_remove
 * leaves it so), which is what fut__list_linked tests.
 *
 * Not thread-safe: callers hold whatever lock protects the list.
 */
#ifndef FUT_UTIL_LIST_H
#define FUT_UTIL_LIST_H

#include <stddef.h>

struct fut__list {
    struct fut__list *next;
    struct fut__list *prev;
};

/* Makes 'l' an empty list, or an unlinked node. */
static inline void fut__list_init(struct fut__list *l)
{
    l->next = l;
    l->prev = l;
}

static inline int fut__list_empty(const struct fut__list *l)
{
    return l->next == l;
}

/* 1 when node 'n' is on some list (it was not unlinked since). */
static inline int fut__list_linked(const struct fut__list *n)
{
    return n->next != n;
}

/* Links node 'n' between the adjacent nodes 'prev' and 'next'. */
static inline void fut__list_insert(struct fut__list *prev,
                                    struct fut__list *next,
                                    struct fut__list *n)
{
    n->prev = prev;
    n->next = next;
    prev->next = n;
    next->prev = n;
}

/* Appends node 'n' at the tail of list 'l' (FIFO order). */
static inline void fut__list_push_back(struct fut__list *l,
                                       struct fut__list *n)
{
    fut__list_insert(l->prev, l, n);
}

/* Inserts node 'n' at the head of list 'l' (LIFO order). */
static inline void fut__list_push_front(struct fut__list *l,
                                        struct fut__list *n)
{
    fut__list_insert(l, l->next, n);
}

/* Unlinks 'n' from whatever list it is on; leaves it unlinked. */
static inline void fut__list_remove(struct fut__list *n)
{
    n->prev->next = n->next;
    n->next->prev = n->prev;
    n->next = n;
    n->prev = n;
}

/* The head node of 'l', or NULL when empty. */
static inline struct fut__list *fut__list_front(const struct fut__list *l)
{
    return l->next == l ? NULL : l->next;
}

/* Moves every node of 'from' to the tail of 'to'; 'from' is left empty. */
static inline void fut__list_splice(struct fut__list *to,
                                    struct fut__list *from)
{
    if (fut__list_empty(from))
        return;
    from->next->prev = to->prev;
    from->prev->next = to;
    to->prev->next = from->next;
    to->prev = from->prev;
    fut__list_init(from);
}

#endif /* FUT_UTIL_LIST_H */
