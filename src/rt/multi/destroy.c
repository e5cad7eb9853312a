/* SPDX-License-Identifier: MIT */
/* The scheduler's last reference (multi.h's "Lifetime" rules): frees the
 * driver, the workers' memory, the scheduler and the runtime handle. */
#include "rt/multi/multi.h"

void fut__mt_destroy(struct mt_sched *m)
{
    if (m->base.driver)
        m->base.driver->vt->free(m->base.driver);
    if (m->w) {
        for (int i = 0; i < m->n; i++) {
            fut__slab_fini(&m->w[i].slab);
            fut__slab_fini(&m->w[i].tslab);
            if (m->w[i].seen)
                fut__free(m->w[i].seen, sizeof(struct seen) * (size_t)m->n);
        }
        fut__free(m->w_mem, m->w_bytes);
    }
    if (m->sleepers)
        fut__free(m->sleepers, sizeof(int) * (size_t)m->n);
    fut__mutex_destroy(&m->sleep_lock);
    fut__mutex_destroy(&m->inject_lock);
    FUT_RT_FORGET(m->base.rt);
    fut__free(m->base.rt, sizeof *m->base.rt);
    fut__free(m, sizeof *m);
}
