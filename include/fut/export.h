/* Export macro and version of the fut library. */
#ifndef FUT_EXPORT_H
#define FUT_EXPORT_H

#if defined(FUT_BUILDING_SHARED) && defined(__GNUC__)
#define FUT_EXTERN __attribute__((visibility("default")))
#else
#define FUT_EXTERN
#endif

#define FUT_VERSION_MAJOR 0
#define FUT_VERSION_MINOR 1
#define FUT_VERSION_PATCH 0
#define FUT_VERSION_HEX                                                       \
    ((FUT_VERSION_MAJOR << 16) | (FUT_VERSION_MINOR << 8) | FUT_VERSION_PATCH)

#ifdef __cplusplus
#define FUT_BEGIN_DECLS extern "C" {
#define FUT_END_DECLS }
#else
#define FUT_BEGIN_DECLS
#define FUT_END_DECLS
#endif

#endif /* FUT_EXPORT_H */
