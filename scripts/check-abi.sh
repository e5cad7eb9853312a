#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The ABI check: the public ABI of a built libfut.so - its exported
# functions and variables and every type of include/ they use, as
# libabigail's abidw writes it - must equal abi/libfut.abi, the reference
# kept in the tree. Any difference fails, an addition included, so that
# every ABI change is a reviewed edit of that file (docs/building.md,
# "Versions and ABI", says when a change needs a new SONAME).
#
#   scripts/check-abi.sh LIBFUT_SO            compare (abidiff), exit 1 on
#                                             any change, printing it
#   scripts/check-abi.sh LIBFUT_SO --update   rewrite abi/libfut.abi
#
# The reference is taken from the test command's plain build (gcc 12,
# x86_64, io_uring on, Debug -O1 -g: abidw reads the DWARF); the exported
# symbols are those of src/libfut.map and do not depend on the build type.
# The CTest test 'check_abi' runs it in that build. Needs abigail-tools.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
REF=$ROOT/abi/libfut.abi
lib=${1:?usage: check-abi.sh LIBFUT_SO [--update]}

for t in abidw abidiff; do
    if ! command -v $t >/dev/null 2>&1; then
        echo "check-abi: $t not found (Debian: apt-get install abigail-tools)" >&2
        exit 2
    fi
done

# No paths or line numbers in the output: the same library built in
# another folder gives the same file.
dump() {
    abidw --no-corpus-path --no-comp-dir-path --no-show-locs \
        --drop-private-types --headers-dir "$ROOT/include/fut" \
        --headers-dir "$ROOT/include" "$1"
}

if [ "${2:-}" = "--update" ]; then
    dump "$lib" > "$REF"
    echo "check-abi: wrote $REF"
    exit 0
fi
[ -f "$REF" ] || { echo "check-abi: no reference $REF (run with --update)" >&2; exit 2; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
dump "$lib" > "$tmp/built.abi"
# abidiff's status is a bit set: 4 = an ABI change, 8 = an incompatible
# one, 1/2 = an error. Every non-zero status fails.
if abidiff --no-show-locs "$REF" "$tmp/built.abi" > "$tmp/diff.txt" 2>&1; then
    echo "check-abi: libfut.so's ABI equals abi/libfut.abi"
    exit 0
fi
cat "$tmp/diff.txt"
echo "check-abi: the ABI of $lib differs from abi/libfut.abi." >&2
echo "  If the change is meant, review it and run: scripts/check-abi.sh $lib --update" >&2
exit 1
