#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Checks that every atomic of the library goes through src/util/atomic.h,
# the one header the model checker (test/mc) swaps: no other file under
# src/ may name <stdatomic.h>, _Atomic, atomic_* (the C11 functions and
# types), memory_order_*, the GCC builtins __atomic_* / __ATOMIC_* or
# __sync_*. Comments count too: a name in a comment is usually code
# that was there or is meant to be.
#
#   scripts/check-atomics.sh [SRC_DIR]     (default: src/ beside scripts/)
#
# Prints every use as file:line: text and exits 1 if there is one; the
# CTest test 'check_atomics' (test/layers.cmake) runs it.
set -euo pipefail
SRC=${1:-$(cd "$(dirname "$0")/.." && pwd)/src}
[ -d "$SRC" ] || { echo "check-atomics.sh: no directory $SRC" >&2; exit 2; }

# \b before each name: fut__atomic_x or my_atomic_y are not C11 names.
pattern='\b(stdatomic|_Atomic|atomic_[a-z_]+|memory_order_[a-z_]+|__atomic_[a-z_]+|__ATOMIC_[A-Z_]+|__sync_[a-z_]+)\b'

found=$(cd "$SRC" && grep -rnE --include='*.c' --include='*.h' "$pattern" . |
    grep -v '^\./util/atomic\.h:' | sed 's|^\./|src/|' || true)
if [ -n "$found" ]; then
    echo "$found"
    echo "check-atomics.sh: atomics outside src/util/atomic.h (use its fut__* operations)" >&2
    exit 1
fi
echo "check-atomics.sh: every atomic of $SRC goes through util/atomic.h"
