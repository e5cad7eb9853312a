#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Checks the form of every source file in the tree (git's list of tracked
# files, so build directories never count):
#   - C and C++ files (*.c, *.h, *.cpp) are as clang-format 14 writes them
#     with the repository's .clang-format (a dry run: nothing is changed);
#   - every source file (C, C++, assembly, shell, Python, CMake) carries
#     the line 'SPDX-License-Identifier: MIT' among its first three lines
#     (after a '#!' line where there is one).
#
#   scripts/check-format.sh          check; list every file that differs
#   scripts/check-format.sh --fix    rewrite the C/C++ files in place
#
# Exits 1 on any finding (each printed as 'file: what'), 2 when
# clang-format-14 is missing, 77 outside a git checkout (skipped).
# The CTest test 'check_format' runs it.
set -euo pipefail
cd "$(dirname "$0")/.."

CF=${CLANG_FORMAT:-clang-format-14}
if ! command -v "$CF" >/dev/null 2>&1; then
    echo "check-format: $CF not found (Debian: apt-get install clang-format-14)" >&2
    exit 2
fi

# The files are git's: outside a git checkout (a tarball) there is no list,
# and the check says so and is skipped (exit 77, CTest's SKIP_RETURN_CODE).
if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    echo "check-format: not a git checkout; skipped"
    exit 77
fi

mapfile -t cfiles < <(git ls-files '*.c' '*.h' '*.cpp')
mapfile -t allsrc < <(git ls-files '*.c' '*.h' '*.cpp' '*.S' '*.sh' '*.py' \
    '*CMakeLists.txt' '*.cmake' '.ci/run')

if [ "${1:-}" = "--fix" ]; then
    printf '%s\0' "${cfiles[@]}" | xargs -0 -n 50 "$CF" -i
    exit 0
fi

bad=0
# clang-format: one dry run over all files; -Werror makes "would
# reformat" a diagnostic ('FILE:LINE:COL: error: code should be
# clang-formatted'), one per place that differs.
if ! out=$(printf '%s\0' "${cfiles[@]}" |
           xargs -0 -n 100 "$CF" --dry-run --Werror 2>&1); then
    while read -r f; do
        echo "$f: not formatted (run: $CF -i $f)"
    done < <(printf '%s\n' "$out" | sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: error:.*/\1/p' | sort -u)
    bad=1
fi
for f in "${allsrc[@]}"; do
    if ! head -n 3 "$f" | grep -q 'SPDX-License-Identifier: MIT'; then
        echo "$f: no 'SPDX-License-Identifier: MIT' line at its top"
        bad=1
    fi
done
if [ "$bad" = 0 ]; then
    echo "check-format: ${#cfiles[@]} C/C++ files formatted, ${#allsrc[@]} files with an SPDX line"
fi
exit $bad
