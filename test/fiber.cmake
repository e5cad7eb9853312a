# Fibers (include/fut/fiber.h): spawn, fut_await under every kind of
# future, wrappers, misuse, cancellation, dump, stack pool and guard page,
# migration between workers (the .mt variants).
set(FIBER_CASES basic await_kinds channels io_echo misuse cancel_abort
  cancel_unstarted cancel_scope scope_fail_fast dump threads_migrate
  stack_pool stack_overflow)
fut_check_test(fiber CASES ${FIBER_CASES}
  MT_CASES basic await_kinds channels io_echo cancel_abort cancel_unstarted
    cancel_scope scope_fail_fast dump threads_migrate
  VALGRIND_CASES basic channels cancel_abort cancel_scope
  TIMEOUT 120)
