#!/usr/bin/env bash
# Installs a built tree into a scratch prefix and builds a consumer three
# ways: pkg-config + shared lib, pkg-config --static + static lib, and
# CMake find_package(fut). Each consumer runs a task and checks the result.
#   check.sh BUILD_DIR SCRATCH_DIR
set -euo pipefail
build=$1
scratch=$2
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$scratch"
mkdir -p "$scratch"
prefix=$scratch/prefix
cmake --install "$build" --prefix "$prefix" >/dev/null
pc=$(dirname "$(find "$prefix" -name fut.pc | head -n1)")
export PKG_CONFIG_PATH=$pc
CC=${CC:-cc}

$CC -std=c11 "$here/consumer/main.c" $(pkg-config --cflags --libs fut) \
    -Wl,-rpath,"$(pkg-config --variable=libdir fut)" -o "$scratch/shared"
"$scratch/shared"
# (ldd's output is captured first: grep -q closing the pipe early would
# SIGPIPE ldd and fail the pipeline under pipefail.)
deps=$(ldd "$scratch/shared")
case $deps in *libfut.so.0*) ;; *) echo "shared consumer lacks libfut.so.0" >&2; exit 1 ;; esac

$CC -std=c11 "$here/consumer/main.c" $(pkg-config --cflags fut) \
    "$(pkg-config --variable=libdir fut)/libfut.a" \
    $(pkg-config --static --libs-only-other --libs-only-l fut | sed 's/-lfut//') \
    -o "$scratch/static"
"$scratch/static"
deps=$(ldd "$scratch/static" || true)
if [[ $deps == *libfut* ]]; then
    echo "static consumer links libfut dynamically" >&2
    exit 1
fi

cmake -S "$here/consumer" -B "$scratch/cmake" -G Ninja \
    -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_C_COMPILER="$CC" >/dev/null
cmake --build "$scratch/cmake" >/dev/null
"$scratch/cmake/consumer_shared"
"$scratch/cmake/consumer_static"
# Only fut_* names are exported from the shared library.
so=$(find "$prefix" -name 'libfut.so.0*' -type f | head -n1)
bad=$(nm -D --defined-only "$so" | awk '{print $3}' | grep -v '^fut_' | grep -v '^FUT_' || true)
if [ -n "$bad" ]; then echo "unexpected exports: $bad" >&2; exit 1; fi
echo "install check: pkg-config shared, static, find_package: ok"
