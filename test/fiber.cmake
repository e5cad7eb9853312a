# SPDX-License-Identifier: MIT
# Fibers (include/fut/fiber.h): spawn, fut_await under every kind of
# future, wrappers, misuse, cancellation, dump, stack pool and guard page,
# migration between workers (the .mt variants).
set(FIBER_CASES basic await_kinds channels io_echo misuse cancel_abort
  cancel_unstarted cancel_scope scope_fail_fast dump threads_migrate
  stack_pool stack_overflow yield_fair cancel_yield yield_next fp_control)
fut_check_test(fiber CASES ${FIBER_CASES}
  MT_CASES basic await_kinds channels io_echo cancel_abort cancel_unstarted
    cancel_scope scope_fail_fast dump threads_migrate yield_fair
    cancel_yield yield_next fp_control
  VALGRIND_CASES basic channels cancel_abort cancel_scope
  TIMEOUT 120 BACKENDS)

# The fiber examples as child processes (needs the examples).
if(FUT_BUILD_EXAMPLES)
  fut_check_test(fiber_examples CASES echo chat MT_CASES echo chat
    TIMEOUT 120 BACKENDS)
  target_compile_definitions(test_fiber_examples PRIVATE
    FUT_ECHO_FIBER="$<TARGET_FILE:echo_fiber>"
    FUT_CHAT_FIBER="$<TARGET_FILE:chat_fiber>")
  add_dependencies(test_fiber_examples echo_fiber chat_fiber)
endif()
