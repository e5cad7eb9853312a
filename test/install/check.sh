#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs a built tree into a scratch prefix and builds a consumer three
# ways: pkg-config + shared lib, pkg-config --static + static lib, and
# CMake find_package(fut). Each consumer runs a task and checks the result.
# When the build made the API reference (FUT_BUILD_DOCS), the man pages
# and the HTML must be installed too.
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

# libfut-tls, when the build has it: its consumer through fut-tls.pc,
# shared and static; and the plain consumer above does not link OpenSSL.
tls=""
if [ -f "$pc/fut-tls.pc" ]; then
    deps=$(ldd "$scratch/shared")
    if [[ $deps == *libssl* || $deps == *libcrypto* ]]; then
        echo "a consumer of libfut alone links OpenSSL" >&2
        exit 1
    fi
    $CC -std=c11 -D_GNU_SOURCE "$here/consumer/tls.c" \
        $(pkg-config --cflags --libs fut-tls) \
        -Wl,-rpath,"$(pkg-config --variable=libdir fut)" -o "$scratch/tls_shared"
    "$scratch/tls_shared"
    lib=$(pkg-config --variable=libdir fut)
    $CC -std=c11 -D_GNU_SOURCE "$here/consumer/tls.c" \
        $(pkg-config --cflags fut-tls) "$lib/libfut-tls.a" "$lib/libfut.a" \
        $(pkg-config --static --libs-only-other --libs-only-l fut-tls |
          sed 's/-lfut-tls//; s/-lfut//') -o "$scratch/tls_static"
    "$scratch/tls_static"
    tls=", fut-tls shared and static"
fi

# The API reference: every public function has a man page of its own
# (a '.so' link to its header's page, which must be installed with it);
# the link pages of struct members are not installed.
docs=""
if grep -q '^FUT_BUILD_DOCS:BOOL=ON$' "$build/CMakeCache.txt"; then
    page=$(find "$prefix" -path '*/man3/fut_spawn.3' | head -n1)
    if [ -z "$page" ]; then echo "no man page fut_spawn.3 installed" >&2; exit 1; fi
    man3=$(dirname "$page")
    for name in fut_spawn fut_version fut_runtime_new fut_mpsc_new; do
        f=$man3/$name.3
        [ -f "$f" ] || { echo "no man page $name.3" >&2; exit 1; }
        target=$(sed -n 's/^\.so //p' "$f")
        if [ -n "$target" ] && [ ! -f "$(dirname "$man3")/$target" ]; then
            echo "$name.3 links to $target, which is not installed" >&2
            exit 1
        fi
    done
    if [ -e "$man3/base.3" ]; then echo "member link page base.3 installed" >&2; exit 1; fi
    if [ -z "$(find "$prefix" -path '*/doc/fut/html/index.html')" ]; then
        echo "no HTML reference installed" >&2
        exit 1
    fi
    docs=", man pages, HTML"
fi
# The hiredis adapter, when it was built: its own library and .pc, and a
# program that uses only libfut links none of it.
adapters=""
if [ -f "$pc/fut-hiredis.pc" ]; then
    $CC -std=c11 "$here/consumer/hiredis_main.c" \
        $(pkg-config --cflags --libs fut-hiredis) \
        -Wl,-rpath,"$(pkg-config --variable=libdir fut)" -o "$scratch/hiredis"
    "$scratch/hiredis"
    deps=$(ldd "$scratch/shared")
    if [[ $deps == *libhiredis.so* || $deps == *libfut_hiredis* ]]; then
        echo "the libfut-only consumer links hiredis" >&2
        exit 1
    fi
    adapters=", fut-hiredis"
fi
echo "install check: pkg-config shared, static, find_package$tls$docs$adapters: ok"
