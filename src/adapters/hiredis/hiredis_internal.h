/* SPDX-License-Identifier: MIT */
/* What the files of libfut-hiredis share: the va_list form of the
 * command future's init, for the fiber wrapper (fiber.c). */
#ifndef FUT_HIREDIS_INTERNAL_H
#define FUT_HIREDIS_INTERNAL_H

#include <stdarg.h>

#include "fut/hiredis.h"

/* fut_redis_cmd_init with the arguments as a va_list. */
void fut__redis_cmd_vinit(struct fut_redis_cmd *f, struct fut_redis *r,
                          const char *fmt, va_list ap);

#endif
