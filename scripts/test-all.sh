#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds and runs every test of fut, as CI does (.ci/run calls exactly this):
#   plain   gcc, Debug (-O1), -Werror, contract checks on, model checker,
#           header/C++ check, install check, valgrind memcheck on the core
#   asan    clang, AddressSanitizer + UndefinedBehaviorSanitizer (+ LSan)
#   tsan    clang, ThreadSanitizer (race tests scaled down, see test/test.h)
#   tsan-release
#           clang, ThreadSanitizer on a Release (-O2) build without
#           FUT_DEBUG: the code paths users run
# Every I/O test area runs on both I/O backends in every build: as
# <area>.<case> on epoll (label backend_epoll) and <area>.<case>.uring on
# io_uring (label backend_uring; liburing-dev is installed below).
# Installs what it needs with apt-get (only what is missing). Ends with the
# line "N passed, N failed, N skipped" over all four builds; exits non-zero
# when any test failed.
#   ONLY=plain|asan|tsan|tsan-release   run one configuration (or a list)
#   JOBS=n                 ctest parallelism (default: number of CPUs)
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)

# redis-server, redis-tools: fut-redis's side-by-side and benchmark tests
# (apps/fut-redis/test) and the hiredis adapter's (test/hiredis.c, with
# libhiredis-dev); libssl-dev, openssl: libfut-tls and its tests
# (test/tls.c runs openssl req, s_client, s_server); libclang-rt-14-dev:
# libFuzzer for clang 14 (redis_fuzz.run in the asan build); abigail-tools,
# clang-format-14, doxygen: the tree's checks (check_abi, check_format,
# check_doxygen); libcurl4-openssl-dev, nginx-light: the libcurl adapter
# and its tests (test/curl.c starts its own nginx; the package's service
# is not used); libuv1-dev: bench/hiredis_libuv.c, hiredis_get's reference
# (hiredis on its libuv adapter), built with the benchmarks by the plain
# build; libpq-dev, postgresql: the libpq adapter and its tests
# (test/pq.c makes and starts its own PostgreSQL 15 cluster as the
# postgres user; the package's service is not used); curl, wrk:
# test/example_https.c drives examples/https_hello with them
deps="build-essential cmake ninja-build pkg-config check clang valgrind python3
      liburing-dev redis-server redis-tools libhiredis-dev libclang-rt-14-dev
      libssl-dev openssl abigail-tools clang-format-14 doxygen
      libcurl4-openssl-dev nginx-light libuv1-dev libpq-dev postgresql
      curl wrk"
missing=""
for p in $deps; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
if [ -n "$missing" ]; then
    SUDO=$(command -v sudo || true)
    $SUDO apt-get update -qq && $SUDO env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -qq $missing || exit 1
fi

JOBS=${JOBS:-$(nproc)}
ONLY=${ONLY:-plain asan tsan tsan-release}
OUT=$ROOT/build-test
mkdir -p "$OUT"
rc=0

# build NAME CMAKE-ARGS... : configure, build, run ctest, keep the junit file
build() {
    local name=$1; shift
    local dir=$OUT/$name
    echo "=== [$name] configure + build"
    if ! cmake -S "$ROOT" -B "$dir" -G Ninja "$@" >"$dir.configure.log" 2>&1; then
        cat "$dir.configure.log"; rc=1; return
    fi
    if ! cmake --build "$dir" >"$dir.build.log" 2>&1; then
        tail -n 60 "$dir.build.log"; echo "build failed: $name"; rc=1; return
    fi
    echo "=== [$name] ctest"
    ctest --test-dir "$dir" --output-on-failure -j"$JOBS" \
        --output-junit "$dir/junit.xml" || rc=1
}

for cfg in $ONLY; do
    case $cfg in
    plain)
        build plain -DCMAKE_C_COMPILER=gcc -DCMAKE_BUILD_TYPE=Debug \
            -DCMAKE_C_FLAGS_DEBUG="-g -O1" -DFUT_WERROR=ON \
            -DFUT_BUILD_MC=ON -DFUT_VALGRIND_TESTS=ON -DFUT_INSTALL_TEST=ON ;;
    asan)
        build asan -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Debug \
            -DCMAKE_C_FLAGS_DEBUG="-g -O1" -DFUT_WERROR=ON -DFUT_ASAN=ON \
            -DFUT_BUILD_MC=OFF -DFUT_BUILD_BENCH=OFF ;;
    tsan)
        build tsan -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Debug \
            -DCMAKE_C_FLAGS_DEBUG="-g -O1" -DFUT_WERROR=ON -DFUT_TSAN=ON \
            -DFUT_BUILD_MC=OFF -DFUT_BUILD_BENCH=OFF ;;
    tsan-release)
        # The code users run: no FUT_DEBUG, so the paths that only
        # release builds take (the folded wake in task.c) run under TSan
        # with real threads; the debug-check tests compile out.
        build tsan-release -DCMAKE_C_COMPILER=clang \
            -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_FLAGS_RELEASE="-g -O2" \
            -DFUT_WERROR=ON -DFUT_TSAN=ON -DFUT_BUILD_MC=OFF \
            -DFUT_BUILD_BENCH=OFF ;;
    *) echo "unknown configuration $cfg"; exit 2 ;;
    esac
done

python3 - "$OUT" $ONLY <<'PY'
import sys, os, xml.etree.ElementTree as ET
out, cfgs = sys.argv[1], sys.argv[2:]
p = f = s = 0
for c in cfgs:
    j = os.path.join(out, c, "junit.xml")
    if not os.path.exists(j):
        print(f"[{c}] no results (build failed)"); f += 1; continue
    st = [t.get("status") for t in ET.parse(j).getroot().iter("testcase")]
    cp = st.count("run"); cs = st.count("notrun") + st.count("disabled")
    print(f"[{c}] {cp} passed, {len(st) - cp - cs} failed, {cs} skipped")
    p += cp; f += len(st) - cp - cs; s += cs
print(f"{p} passed, {f} failed, {s} skipped")
PY
exit $rc
