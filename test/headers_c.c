/* The umbrella header compiles alone under -std=c11 -Wpedantic -Werror. */
#include <fut.h>

int main(void)
{
    struct fut_ready r;
    struct fut_context cx;
    fut_ready_init(&r, 3);
    fut_context_init(&cx, fut_waker_noop());
    return fut_poll(&r.base, &cx) == FUT_READY && r.value == 3 ? 0 : 1;
}
