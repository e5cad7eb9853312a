/* SPDX-License-Identifier: MIT */
/** \file
 * fut: an async runtime for C11 on Linux. Futures are write-once cells
 * polled by a non-blocking contract; wakers are a pointer and a vtable;
 * cancellation is a drop. This umbrella header includes every module in
 * dependency order. */
#ifndef FUT_H
#define FUT_H

#include "fut/export.h"
#include "fut/version.h"
#include "fut/core.h"
#include "fut/cell.h"
#include "fut/sync.h"
#include "fut/chan.h"
#include "fut/combinators.h"
#include "fut/stream.h"
#include "fut/rt.h"
#include "fut/time.h"
#include "fut/io.h"
#include "fut/fd.h"
#include "fut/net.h"
#include "fut/cancel.h"
#include "fut/scope.h"
#include "fut/fiber.h"
#include "fut/testing.h"
#include "fut/sim.h"

#endif /* FUT_H */
