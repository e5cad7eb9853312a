/* SPDX-License-Identifier: MIT */
/* The thread-local pointers every room reads (multi.h): the worker on
 * this thread (worker.c sets it) and the runtime whose lists this thread
 * owns while it shuts it down (shutdown.c sets it). Defined here, in no
 * room, so that reading them makes no room depend on another. */
#include "rt/multi/multi.h"

_Thread_local struct mt_worker *fut__mt_tls_w;
_Thread_local struct mt_sched *fut__mt_tls_owner;
