/* SPDX-License-Identifier: MIT */
/** \file
 * Export macro and C++ guards of the fut headers (the version is in
 * fut/version.h). */
#ifndef FUT_EXPORT_H
#define FUT_EXPORT_H

#if defined(FUT_BUILDING_SHARED) && defined(__GNUC__)
#define FUT_EXTERN __attribute__((visibility("default")))
#else
#define FUT_EXTERN
#endif

#ifdef __cplusplus
#define FUT_BEGIN_DECLS extern "C" {
#define FUT_END_DECLS }
#else
#define FUT_BEGIN_DECLS
#define FUT_END_DECLS
#endif

#endif /* FUT_EXPORT_H */
