/* SPDX-License-Identifier: MIT */
// The public headers compile as C++17 with -Wpedantic -Werror and link:
// a C++ user writes a future, a waker and a task against the C API, and
// links fut_version() (fut/version.h's extern "C").
#include <fut.h>
#ifdef FUT_TEST_HAVE_TLS
#include <fut/tls.h> // libfut-tls, when built
#endif

#include <cstdio>
#include <cstring>

namespace
{

struct answer {
    fut_future base;
    int value;
};

int answer_poll(fut_future *f, fut_context *cx)
{
    (void)cx;
    reinterpret_cast<answer *>(f)->value = 42;
    return FUT_READY;
}

const fut_future_vtable answer_vt = {answer_poll, nullptr, "answer", nullptr};

} // namespace

int main()
{
    if (fut_version() != FUT_VERSION_HEX ||
        std::strcmp(fut_version_string(), FUT_VERSION_STRING) != 0)
        return 1;
    fut_runtime *rt = nullptr;
    if (fut_runtime_new(nullptr, &rt) != 0)
        return 1;
    answer a;
    fut_future_init(&a.base, &answer_vt);
    a.value = 0;
    fut_join j;
    int value = 0;
    if (fut_spawn(rt, &a, sizeof a, &j) != 0)
        return 1;
    FUT_JOIN_OUTPUT(&j, answer, value, &value);
    fut_block_on(rt, &j.base);
    fut_drop(&j.base);
    fut_runtime_free(rt);
    std::printf("value=%d live=%ld\n", value, fut_alloc_live());
    return value == 42 && fut_alloc_live() == 0 ? 0 : 1;
}
