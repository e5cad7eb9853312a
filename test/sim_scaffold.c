/* SPDX-License-Identifier: MIT */
/* The simulated-network tests' shared scaffolding: sim_scaffold.h. */
#include "sim_scaffold.h"

#include <string.h>

#include "test.h"

static int echo_round_poll(struct fut_future *f, struct fut_context *cx)
{
    struct sim_echo_round *e = (struct sim_echo_round *)f;
    FUT_BEGIN(f);
    fut_io_write_all_init(&e->wa, e->io, e->out, e->len);
    FUT_AWAIT(f, &e->wa);
    ck_assert_int_eq(e->wa.result, (ssize_t)e->len);
    for (e->got = 0; e->got < e->len; e->got += (size_t)e->rd.result) {
        fut_io_read_init(&e->rd, e->io, e->in + e->got, e->len - e->got);
        FUT_AWAIT(f, &e->rd);
        ck_assert_int_gt(e->rd.result, 0);
    }
    ck_assert_msg(memcmp(e->in, e->out, e->len) == 0,
                  "client %d round %d: echo differs", e->id, e->k);
    FUT_END(f);
}
FUT_ASYNC_VTABLE(echo_round_vt, "sim_echo_round", echo_round_poll, NULL);

void sim_echo_round_init(struct sim_echo_round *e, struct fut_io *io,
                         const unsigned char *out, unsigned char *in,
                         size_t len, int id, int k)
{
    memset(e, 0, sizeof *e);
    fut_future_init(&e->base, &echo_round_vt);
    e->io = io;
    e->out = out;
    e->in = in;
    e->len = len;
    e->id = id;
    e->k = k;
}
