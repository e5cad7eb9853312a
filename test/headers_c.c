/* SPDX-License-Identifier: MIT */
/* The umbrella header compiles alone under -std=c11 -Wpedantic -Werror,
 * and brings fut/version.h: the library linked is the headers' version.
 * fut/tls.h (libfut-tls, not in the umbrella) too, when built. */
#include <fut.h>
#include <string.h>
#ifdef FUT_TEST_HAVE_TLS
#include <fut/tls.h>
#endif

int main(void)
{
    struct fut_ready r;
    struct fut_context cx;
    fut_ready_init(&r, 3);
    fut_context_init(&cx, fut_waker_noop());
    if (fut_version() != FUT_VERSION_HEX ||
        strcmp(fut_version_string(), FUT_VERSION_STRING) != 0)
        return 1;
    return fut_poll(&r.base, &cx) == FUT_READY && r.value == 3 ? 0 : 1;
}
