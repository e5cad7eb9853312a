#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Instructions per echo round trip under callgrind, and where they go by
# function: fut's echo_server (epoll, current-thread: the example users
# copy, with its idle deadline, cancel token and task scope), fut's
# echo_min (bench/echo_min.c: the peers' shape, nothing but read and
# write - what the runtime alone costs), the floor (../shared/peers/
# baseline_c/floor.c on epoll: a hand-written loop, no runtime), the
# libuv peer's echo server and the Tokio peer's (current_thread).
#
#   bench/callgrind_echo.sh              N1=20000 N2=100000 round trips
#   N1=10000 N2=50000 bench/callgrind_echo.sh
#   MODE=http bench/callgrind_echo.sh    HTTP requests instead (N1=5000
#                                        N2=25000 by default)
#   MODE=tls bench/callgrind_echo.sh     full TLS 1.3 handshakes instead
#                                        (N1=100 N2=500; KEY=ecdsa|rsa)
#
# MODE=http: instructions per HTTP/1.1 keep-alive request (wrk's shape:
# 50 connections, one request in flight on each) for fut's http_hello
# (the example: full head parse, limits, deadlines), the floor's http mode,
# the libuv peer's http-server and the Tokio peer's (current_thread), each
# driven by bench/http_count (an exact request count: wrk runs for a
# time, not a count).
#
# MODE=tls: instructions per full TLS 1.3 handshake (issue 33's
# tls_handshakes: no resumption, then close_notify both ways and close)
# for fut's https_hello (epoll, current-thread) and nginx (one process,
# bench/servers.sh's srv_nginx_tls), same certificate (KEY: ecdsa = P-256,
# rsa = RSA-2048, made here with openssl req), driven by bench/tls_hsload
# with HS_TOTAL (an exact count; 10 connections at a time). fut signs
# RSA on its blocking pool: callgrind counts every thread.
#
# Each server runs under `valgrind --tool=callgrind` twice, in a fresh
# process each time, driven by the peers' loadgen (50 connections, 64-byte
# messages, as tcp_echo) for N1 and then N2 timed round trips, and is
# stopped with SIGTERM (callgrind writes its counts at exit). Everything
# that is not per round trip (start-up, 50 accepts, the loadgen's warm-up
# of 20 round trips per connection, shutdown) is the same in both runs, so
#   Ir per round trip = (Ir(N2) - Ir(N1)) / (N2 - N1)
# and the same difference per function (callgrind_annotate, exclusive
# counts) says where they go. Callgrind counts user-space instructions
# only: the kernel's side of each read and write is not in these figures.
#
# fut is built in its own directory (BUILD_DIR, default build-bench-prof)
# with run.sh's flags plus -g; the peers are built in PEERS_WORKDIR
# (default /tmp/fut-peers) as run.sh does. Output: bench/results/
# callgrind-<stamp>.txt (the tables, also on stdout) and the four
# callgrind.out files next to it.
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(dirname "$HERE")
MODE=${MODE:-echo}
case $MODE in
echo) N1=${N1:-20000} N2=${N2:-100000} ;;
http) N1=${N1:-5000} N2=${N2:-25000} ;;
tls) N1=${N1:-100} N2=${N2:-500} ;;
*) echo "callgrind_echo.sh: MODE is echo, http or tls" >&2; exit 2 ;;
esac
TOP=${TOP:-25}
BUILD=${BUILD_DIR:-$ROOT/build-bench-prof}
PEERS_SRC=${PEERS_SRC:-$ROOT/../shared/peers}
[ -d "$PEERS_SRC" ] || [ ! -d "$ROOT/../../shared/peers" ] || PEERS_SRC=$ROOT/../../shared/peers
PEERS=${PEERS_WORKDIR:-${TMPDIR:-/tmp}/fut-peers}
STAMP=$(date +%Y%m%d-%H%M%S)
RES=$HERE/results
mkdir -p "$RES"
OUT=$RES/callgrind-$STAMP.txt
LOG=$RES/callgrind-$STAMP.log
: >"$OUT"
: >"$LOG"

say() { echo "$*" >&2; }
die() { say "callgrind_echo.sh: $*"; exit 1; }
[ "$N2" -gt "$N1" ] 2>/dev/null || die "N2 ($N2) must be larger than N1 ($N1)"

for p in valgrind iproute2 libuv1-dev; do
    dpkg -s "$p" >/dev/null 2>&1 && continue
    [ "$(id -u)" = 0 ] || die "missing Debian package $p (run as root to install it)"
    { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y "$p"; } >>"$LOG" 2>&1 ||
        die "apt-get install $p failed (see $LOG)"
done

say "== build fut with symbols ($BUILD)"
cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    "-DCMAKE_C_FLAGS_RELEASE=-O2 -g -DNDEBUG" -DFUT_DEBUG_CHECKS=OFF \
    -DFUT_BUILD_TESTS=OFF -DFUT_BUILD_MC=OFF -DFUT_BUILD_EXAMPLES=ON \
    -DFUT_BUILD_BENCH=ON -DFUT_LTO="${FUT_LTO:-ON}" >>"$LOG" 2>&1 &&
    if [ "$MODE" = tls ]; then
        cmake --build "$BUILD" --target https_hello tls_hsload >>"$LOG" 2>&1
    else
        cmake --build "$BUILD" --target echo_server echo_min http_hello \
            http_count >>"$LOG" 2>&1
    fi ||
    die "building the servers and their client failed (see $LOG)"
if [ "$MODE" != tls ]; then
    . "$HERE/peers.sh"
    peers_build || die "$PEERS_NOTE"
fi
TOKIO=$PEERS/tokio/target/release/tokio-peer-bench
LOADGEN=$PEERS/loadgen/loadgen

. "$HERE/servers.sh"
SRV_STOP_SECS=120 # a server under valgrind writes its counts as it exits
trap '[ "$BASHPID" = $$ ] && rm -rf "$SRV_TMP"' EXIT

# measure NAME MODE N CMD...: CMD under callgrind for N round trips
# (FUT_IO_BACKEND=epoll in its environment: fut's server runs on epoll);
# prints the callgrind.out file's path.
measure() {
    local name=$1 mode=$2 n=$3 f
    shift 3
    f=$RES/callgrind-$STAMP-$name-$n.out
    say "-- $name, $n round trips"
    if [ "$1" = srv_nginx_tls ]; then # a shell function: it runs nginx with
        SRV_NGINX_PREFIX="valgrind --tool=callgrind --callgrind-out-file=$f"
        srv_start "$mode" 60 "$@"
    else
        srv_start "$mode" 60 env FUT_IO_BACKEND=epoll \
            valgrind --tool=callgrind --callgrind-out-file="$f" "$@"
    fi || die "$name did not start under valgrind: $SRV_NOTE"
    SRV_NGINX_PREFIX=""
    if [ "$MODE" = tls ]; then
        HS_TOTAL=$n HS_CONNS=10 "$BUILD/bench/tls_hsload" "$SRV_PORT" "$name" callgrind \
            >>"$LOG" 2>&1
    elif [ "$MODE" = http ]; then
        "$BUILD/bench/http_count" "$SRV_PORT" 50 "$n" >>"$LOG" 2>&1
    else
        srv_load_echo "$SRV_PORT" "$name" callgrind 50 "$n" tcp_echo >>"$LOG"
    fi || die "the load against $name failed (see $LOG)"
    srv_stop
    [ -s "$f" ] || die "no callgrind output from $name (see $LOG)"
    echo "$f"
}

# by_function FILE: "<Ir>\t<function>" lines, exclusive, every function;
# callgrind's "file:function" entries (a function inlined from a header is
# an entry of its own, named by the header) are summed by function.
by_function() {
    callgrind_annotate --inclusive=no --auto=no --threshold=100 "$1" 2>>"$LOG" |
        awk '$1 ~ /^[0-9,]+$/ && NF >= 2 && $0 !~ /PROGRAM TOTALS/ {
                 ir = $1; gsub(",", "", ir); $1 = ""
                 sub(/^ +(\([ 0-9.]+%\) +)?/, ""); obj = ""
                 if (match($0, / \[[^]]*\]$/)) {
                     obj = substr($0, RSTART + 2, RLENGTH - 3); sub(/.*\//, "", obj)
                     $0 = substr($0, 1, RSTART - 1) }
                 sub(/^[^:]*:/, "")
                 # no symbol (a static function of a library without debug
                 # information): the address, in its object
                 if ($0 ~ /^0x/ && obj != "") $0 = $0 " in " obj
                 sum[$0] += ir }
             END { for (f in sum) print sum[f] "\t" f }'
}

total_ir() {
    callgrind_annotate --auto=no "$1" 2>>"$LOG" |
        awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1; exit }'
}

# report NAME FILE1 FILE2: Ir per round trip (or request) and the top
# functions.
report() {
    local name=$1 f1=$2 f2=$3 t1 t2
    t1=$(total_ir "$f1")
    t2=$(total_ir "$f2")
    awk -v n="$name" -v a="$t1" -v b="$t2" -v n1="$N1" -v n2="$N2" 'BEGIN {
        printf "%s: Ir(%d) = %.0f, Ir(%d) = %.0f: %.0f instructions per round trip\n\n",
               n, n1, a, n2, b, (b - a) / (n2 - n1) }'
    echo "| Ir per round trip | share | function |"
    echo "|---|---|---|"
    join -t $'\t' -j 2 -a 2 -e 0 -o 0,1.1,2.1 \
        <(by_function "$f1" | sort -t $'\t' -k2,2) \
        <(by_function "$f2" | sort -t $'\t' -k2,2) |
        awk -F '\t' -v n1="$N1" -v n2="$N2" -v all="$((t2 - t1))" -v top="$TOP" '
            { d = ($3 - $2) / (n2 - n1); if (d > 0.05) printf "%.1f\t%s\n", d, $1 }' |
        sort -t $'\t' -k1,1 -rn | head -"$TOP" |
        awk -F '\t' -v per="$(((t2 - t1) / (N2 - N1)))" '
            { printf "| %.1f | %.1f%% | %s |\n", $1, per ? 100 * $1 / per : 0, $2 }'
    echo
}

# pair NAME MODE CMD...: the server measured at N1 and at N2; sets P1, P2.
pair() {
    local name=$1 mode=$2
    shift 2
    P1=$(measure "$name" "$mode" "$N1" "$@") || exit 1
    P2=$(measure "$name" "$mode" "$N2" "$@") || exit 1
}

# the rows: name (for the report), callgrind name, start mode, command
if [ "$MODE" = tls ]; then
    KEY=${KEY:-ecdsa}
    TLS_KEY=$SRV_TMP/$KEY.key TLS_CRT=$SRV_TMP/$KEY.crt
    case $KEY in ecdsa) kopt="ec -pkeyopt ec_paramgen_curve:P-256" ;; *) kopt=rsa:2048 ;; esac
    # shellcheck disable=SC2086 # the key options are words
    openssl req -x509 -newkey $kopt -nodes -keyout "$TLS_KEY" -out "$TLS_CRT" -days 2 \
        -subj /CN=localhost -addext subjectAltName=DNS:localhost,IP:127.0.0.1 >>"$LOG" 2>&1 ||
        die "openssl req failed (see $LOG)"
    what="full TLS 1.3 handshakes ($KEY), 10 at a time (bench/tls_hsload)"
    rows=("fut https_hello (epoll, current_thread, $KEY)|fut_https_hello|print|$BUILD/examples/https_hello --cert $TLS_CRT --key $TLS_KEY"
        "nginx (worker_processes 1, $KEY)|nginx|probe|srv_nginx_tls")
elif [ "$MODE" = http ]; then
    what="requests, 50 keep-alive connections (bench/http_count)"
    rows=("fut http_hello (epoll, current_thread)|fut_http_hello|print|$BUILD/examples/http_hello"
        "floor http (epoll, hand-written)|floor|probe|$PEERS/baseline_c/floor epoll http"
        "libuv http-server (default loop)|libuv|probe|$PEERS/libuv/uvbench http-server"
        "Tokio 1.24 http-server (current_thread)|tokio|probe|$TOKIO http-server ct")
else
    what="round trips, 50 connections x 64 B"
    rows=("fut echo_server (epoll, current_thread)|fut_echo_server|print|$BUILD/examples/echo_server"
        "fut echo_min (epoll, current_thread; the peers' shape)|fut_echo_min|print|$BUILD/bench/echo_min"
        "floor (epoll, hand-written)|floor|probe|$PEERS/baseline_c/floor epoll echo"
        "libuv echo-server (default loop)|libuv|probe|$PEERS/libuv/uvbench echo-server"
        "Tokio 1.24 echo-server (current_thread)|tokio|probe|$TOKIO echo-server ct")
fi
files=()
for r in "${rows[@]}"; do
    IFS='|' read -r title name mode cmd <<<"$r"
    read -ra argv <<<"$cmd"
    pair "$name" "$mode" "${argv[@]}"
    files+=("$title|$P1|$P2")
done

{
    echo "# callgrind_echo.sh MODE=$MODE $STAMP: N1=$N1 N2=$N2 $what;" \
        "fut $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')," \
        "$(lscpu | sed -n 's/^Model name: *//p')"
    echo
    for f in "${files[@]}"; do
        IFS='|' read -r title f1 f2 <<<"$f"
        report "$title" "$f1" "$f2"
    done
} | case $MODE in
    http) sed 's/per round trip/per request/' ;;
    tls) sed 's/per round trip/per handshake/' ;;
    *) cat ;;
    esac |
    tee "$OUT"
say "== written: $OUT (callgrind files: $RES/callgrind-$STAMP-*.out)"
