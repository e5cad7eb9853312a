# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# The peers' build, sourced by bench/run.sh and bench/callgrind_echo.sh
# (bash; not run by itself). The caller sets PEERS_SRC (the peers'
# sources, ../shared/peers, may be read-only), PEERS (a writable copy is
# built there) and LOG (the build's output is appended to it).

# peers_build: installs the peers' Debian packages with their setup.sh
# when one is missing (root only), copies the sources to PEERS and builds
# the loadgen, the libuv and C peers (make) and the Tokio peer (cargo,
# offline, from Debian's crates). Go is left to the caller (optional
# there). Returns 1 with PEERS_NOTE saying what failed.
peers_build() {
    local p missing="" d
    for p in librust-tokio-dev libuv1-dev; do
        dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
    done
    if [ -n "$missing" ]; then
        if [ "$(id -u)" != 0 ]; then
            PEERS_NOTE="the peers' packages are missing: run $PEERS_SRC/setup.sh as root"
            return 1
        fi
        echo "== peers' packages missing:$missing: $PEERS_SRC/setup.sh" >&2
        bash "$PEERS_SRC/setup.sh" >>"$LOG" 2>&1 ||
            { PEERS_NOTE="setup.sh failed (see $LOG)"; return 1; }
    fi
    echo "== build peers ($PEERS)" >&2
    mkdir -p "$PEERS" && cp -a "$PEERS_SRC"/. "$PEERS"/ && chmod -R u+w "$PEERS" ||
        { PEERS_NOTE="cannot copy the peers to $PEERS"; return 1; }
    for d in loadgen libuv baseline_c; do
        make -s -C "$PEERS/$d" >>"$LOG" 2>&1 ||
            { PEERS_NOTE="make -C $PEERS/$d failed"; return 1; }
    done
    (cd "$PEERS/tokio" && cargo build --release --offline -q) >>"$LOG" 2>&1 ||
        { PEERS_NOTE="building the Tokio peer failed (see $LOG)"; return 1; }
}
