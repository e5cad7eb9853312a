/* SPDX-License-Identifier: MIT */
/* The version of the library itself (fut_version, fut_version_string):
 * the FUT_VERSION_* macros of include/fut/version.h as this library was
 * compiled with them, so a program can compare the headers it was built
 * against with the libfut.so it runs on. */
#include "fut/version.h"

unsigned fut_version(void)
{
    return FUT_VERSION_HEX;
}

const char *fut_version_string(void)
{
    return FUT_VERSION_STRING;
}
