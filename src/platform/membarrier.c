/* SPDX-License-Identifier: MIT */
/* The asymmetric fence of rt/lifo.h: Linux membarrier(2) with
 * MEMBARRIER_CMD_PRIVATE_EXPEDITED (a full barrier in every running thread
 * of this process, by IPI; Linux 4.14+), which needs one registration per
 * process. Where it is missing (an older kernel, a seccomp filter that
 * refuses the call) fut__membarrier_init says 0 and the scheduler keeps
 * its locked instruction instead. FUT_NO_MEMBARRIER=1 in the environment
 * does the same (to compare the two, or to rule the fence out). */
#include <errno.h>
#include <linux/membarrier.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "platform/membarrier.h"

static long membarrier(int cmd)
{
    return syscall(SYS_membarrier, cmd, 0, 0);
}

int fut__membarrier_init(void)
{
    const char *off = getenv("FUT_NO_MEMBARRIER");
    if (off && off[0] == '1')
        return 0;
    long cmds = membarrier(MEMBARRIER_CMD_QUERY);
    if (cmds < 0 || !(cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED))
        return 0;
    /* Idempotent: every runtime of the process may ask again. */
    return membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0;
}

int fut__membarrier(void)
{
    return membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0 ? 0 : -errno;
}
