/* SPDX-License-Identifier: MIT */
/* The library's mutex, behind one name so a checker can take it over. */
#ifndef FUT_UTIL_MUTEX_H
#define FUT_UTIL_MUTEX_H

#include <pthread.h>

typedef pthread_mutex_t fut__mutex;

#define fut__mutex_init(m) pthread_mutex_init((m), NULL)
#define fut__mutex_destroy(m) pthread_mutex_destroy(m)
#define fut__mutex_lock(m) pthread_mutex_lock(m)
#define fut__mutex_unlock(m) pthread_mutex_unlock(m)

#endif /* FUT_UTIL_MUTEX_H */
