/* SPDX-License-Identifier: MIT */
/** \file
 * fut curl: libcurl transfers as fut futures (the adapter library
 * libfut-curl: link -lfut_curl, pkg-config fut-curl; built when CMake
 * finds libcurl, FUT_CURL=AUTO|ON|OFF). Not included by fut.h: a program
 * that uses no adapter links none.
 *
 * A struct fut_curl_multi wraps a CURLM driven by the runtime it was made
 * on: curl's socket callback registers each socket (a duplicate of its
 * fd, so that curl may close it before it says CURL_POLL_REMOVE) with
 * fut_fd_register (include/fut/fd.h); a task per socket awaits its
 * readiness and calls curl_multi_socket_action; curl's timer callback arms a fut timer (a
 * task sleeping until the deadline). A transfer is a future over an easy
 * handle you configured (URL, write callback, ...), READY with the
 * transfer's CURLcode:
 * \code
 *   struct fut_curl_multi *m;
 *   fut_curl_multi_new(&m);                 // on a runtime's thread
 *   CURL *e = curl_easy_init();
 *   curl_easy_setopt(e, CURLOPT_URL, "http://127.0.0.1:8080/");
 *   CURLcode code;
 *   int r = fut_curl_perform(m, e, &code);  // in a fiber
 *   curl_easy_cleanup(e);
 *   fut_curl_multi_free(m);
 * \endcode
 *
 * Ownership: the easy handle stays yours. While a transfer runs (from its
 * first poll until it is READY or dropped) it belongs to the multi: do
 * not touch it (no setopt, no cleanup), and know that its CURLOPT_PRIVATE
 * holds the adapter's pointer (yours is put back when the transfer ends:
 * read it afterwards). When the future is READY or dropped the handle is
 * out of the multi again: reuse it or clean it up.
 *
 * Threads: libcurl's multi handle is not thread-safe, so every curl call
 * of a multi (curl_multi_add_handle, _remove_handle, _socket_action,
 * _info_read, _cleanup) is made under the multi's mutex, and curl's
 * callbacks - the socket and timer callbacks and your easy handles' write,
 * header, progress, ... callbacks - run under it, on whichever thread of
 * the runtime drives the multi at that moment (any worker on the
 * multi-thread runtime). A transfer future may be polled and dropped on
 * any thread of the runtime. From inside a curl callback do not call into
 * the same multi (no fut_curl_* call on it, no drop of one of its
 * transfers, no fut_join_abort of a task holding one): the mutex is not
 * recursive, and curl forbids it too.
 *
 * Call curl_global_init before the first multi (libcurl's rule).
 */
#ifndef FUT_CURL_H
#define FUT_CURL_H

#include <curl/curl.h>

#include "fut/core.h"

FUT_BEGIN_DECLS

/** A libcurl multi handle driven by a fut runtime. Opaque; made by
 * fut_curl_multi_new, freed by fut_curl_multi_free. */
struct fut_curl_multi;

/** Makes a multi handle driven by the runtime running on this thread:
 * sets its CURLMOPT_SOCKETFUNCTION and CURLMOPT_TIMERFUNCTION (and their
 * data) and spawns its timer task. Returns 0 with '*out' set;
 * FUT_EINVAL (no runtime with a driver on this thread); FUT_ENOMEM
 * (curl_multi_init failed too); FUT_ESHUTDOWN (the runtime is shutting
 * down). Thread: one running a runtime (a task, a fiber, or inside
 * fut_block_on). */
FUT_EXTERN int fut_curl_multi_new(struct fut_curl_multi **out);

/** Ends the multi: every transfer still running is taken out of it
 * (curl_multi_remove_handle: curl calls none of its callbacks after this)
 * and completes with result FUT_ECANCELED; every socket is deregistered
 * (the sockets are curl's: curl_multi_cleanup closes them); the tasks of
 * the multi end at their next poll, or are dropped with the runtime. The
 * memory goes when the last of them and of the transfers that still refer
 * to it is gone. NULL: nothing. Call it before fut_runtime_free of the
 * runtime it was made on, or after (its tasks were then dropped, and
 * their sockets deregistered, by the runtime's shutdown). Thread: any
 * thread of the runtime, or the thread that created a current-thread
 * runtime when no fut_block_on runs (as fut_fd_deregister). */
FUT_EXTERN void fut_curl_multi_free(struct fut_curl_multi *m);

/** The CURLM under 'm', for curl_multi_setopt of options such as
 * CURLMOPT_MAX_TOTAL_CONNECTIONS or CURLMOPT_MAX_HOST_CONNECTIONS: only
 * before the first transfer starts, and never CURLMOPT_SOCKETFUNCTION,
 * CURLMOPT_TIMERFUNCTION or their data (the adapter's). */
FUT_EXTERN CURLM *fut_curl_multi_handle(struct fut_curl_multi *m);

/** Counters of a multi (fut_curl_multi_stats). */
struct fut_curl_stats {
    unsigned long transfers; /**< transfers in the multi now */
    unsigned long sockets;   /**< sockets curl has us watch now */
    unsigned long actions;   /**< curl_multi_socket_action calls so far */
    unsigned long completed; /**< transfers curl finished so far */
};

/** A snapshot of the counters of 'm' (neither may be NULL: debug builds
 * abort). Thread: any (takes the mutex). */
FUT_EXTERN void fut_curl_multi_stats(struct fut_curl_multi *m,
                                     struct fut_curl_stats *out);

/** fut_curl_transfer: runs the easy handle 'easy' on the multi 'm' (added
 * at the first poll) until curl finishes it.
 * Output: 'result' = 0 when curl finished the transfer, and 'code' is
 * then its CURLcode (CURLE_OK, or CURLE_OPERATION_TIMEDOUT,
 * CURLE_COULDNT_CONNECT, ...: curl's verdict); or a negative code, 'code'
 * untouched: FUT_EINVAL (curl_multi_add_handle refused the handle: it is
 * in a multi already, or NULL), FUT_ENOMEM, FUT_ECANCELED (the multi was
 * freed first).
 * Drop before READY: the easy handle is taken out of the multi
 * (curl_multi_remove_handle) before the drop returns, so curl calls none
 * of its callbacks any more and writes nothing into memory you free
 * afterwards; the connection is closed (or cached by curl).
 * loses-data: a dropped transfer is gone - what its write callback got is
 * all there is, and the request may have reached the server.
 * Thread: polled and dropped on any thread of the multi's runtime, one at
 * a time. */
struct fut_curl_transfer {
    struct fut_future base;         /**< the future header */
    struct fut_curl_multi *multi;   /**< private */
    CURL *easy;                     /**< read-only: the easy handle */
    struct fut_curl_transfer *prev; /**< private: the multi's list */
    struct fut_curl_transfer *next; /**< private: the multi's list */
    struct fut_waker waker;         /**< private */
    void *user_private; /**< private: the easy's CURLOPT_PRIVATE */
    int state;          /**< private: under the multi's mutex */
    int held;           /**< private: the poll side's reference */
    int result;         /**< output */
    CURLcode code;      /**< output */
};

/** Initialises 't' to run 'easy' on 'm' (which must outlive the future's
 * first poll; the future then holds it). Nothing happens before the
 * first poll. 'm' or 'easy' NULL: the future is READY with FUT_EINVAL. */
FUT_EXTERN void fut_curl_transfer_init(struct fut_curl_transfer *t,
                                       struct fut_curl_multi *m, CURL *easy);

/** The fiber wrapper: runs 'easy' on 'm' as fut_curl_transfer and
 * returns its 'result' (0, or FUT_EINVAL, FUT_ENOMEM, FUT_ECANCELED) with
 * '*code' set when 0; FUT_ECANCELED also when the fiber is cancelled (the
 * transfer was dropped: removed from the multi). Outside a fiber: aborts
 * in debug builds, FUT_EINVAL otherwise (include/fut/fiber.h's rules). */
#define fut_curl_perform(m, easy, code)                                      \
    fut_curl_perform_at((m), (easy), (code), __FILE__, __LINE__)
/** The function behind fut_curl_perform(), which passes its call site as
 * 'file' and 'line' (for task dumps and debug reports). */
FUT_EXTERN int fut_curl_perform_at(struct fut_curl_multi *m, CURL *easy,
                                   CURLcode *code, const char *file,
                                   int line);

FUT_END_DECLS

#endif /* FUT_CURL_H */
