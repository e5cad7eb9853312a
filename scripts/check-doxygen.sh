#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The check_doxygen test (test/doxygen.cmake): doxygen over the public
# headers with warnings as errors (docs/Doxyfile.in: an undocumented
# public function, type, macro or struct member fails), then a check
# that every header got a page of its own. Doxygen documents the
# declarations of a header only when the file itself is documented (its
# opening /** \file block) and says nothing when it is not, so a new
# header without one would pass the first step with none of its
# declarations checked.
#
#   scripts/check-doxygen.sh DOXYGEN DOXYFILE OUTPUT_DIR
set -euo pipefail
doxygen=$1
doxyfile=$2
out=$3
cd "$(dirname "$0")/.."

rm -rf "$out/html" "$out/man"
"$doxygen" "$doxyfile"

missing=0
for h in include/fut.h include/fut/*.h; do
    if [ ! -f "$out/man/man3/$(basename "$h").3" ]; then
        echo "$h: no page: the file has no /** \\file block, so doxygen" \
             "skipped its declarations" >&2
        missing=1
    fi
done
if [ "$missing" = 0 ]; then
    echo "check-doxygen: every public declaration documented, every header has a page"
fi
exit "$missing"
