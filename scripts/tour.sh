#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds fut (Release) and runs the tour, examples/tour.c. Installs the
# build tools with apt-get if they are missing.
set -euo pipefail
cd "$(dirname "$0")/.."
deps="build-essential cmake ninja-build pkg-config"
missing=""
for p in $deps; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
if [ -n "$missing" ]; then
    SUDO=$(command -v sudo || true)
    $SUDO apt-get update -qq && $SUDO env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -qq $missing
fi
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DFUT_BUILD_TESTS=OFF \
    -DFUT_BUILD_MC=OFF -DFUT_BUILD_BENCH=OFF >/dev/null
cmake --build build --target tour
./build/examples/tour
