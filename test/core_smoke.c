/* Smoke test of the build and test plumbing: a runtime runs a task. */
#include "test.h"

START_TEST(smoke_spawn_join)
{
    struct fut_runtime *rt;
    ASSERT_EQ(fut_runtime_new(NULL, &rt), 0);
    int polls = 0, drops = 0;
    struct counting_future cf;
    counting_future_init(&cf, 3, 1, &polls, &drops, 7);
    struct fut_join j;
    ASSERT_EQ(fut_spawn(rt, &cf, sizeof cf, &j), 0);
    ASSERT_EQ(fut_block_on(rt, &j.base), 0);
    ASSERT_EQ(j.result, 0);
    struct counting_future *out = fut_join_output(&j);
    ASSERT_EQ(out->value, 7);
    ASSERT_EQ(polls, 4);
    ASSERT_EQ(drops, 1);
    fut_drop(&j.base);
    fut_runtime_free(rt);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("core_smoke");
    TCase *tc = fut_test_tcase(s, "smoke");
    tcase_add_test(tc, smoke_spawn_join);
    return fut_test_run(s);
}
