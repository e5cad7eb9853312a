#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# fut against the peers of ../shared/peers, in one run on one machine.
#
# Builds fut's benchmark programs (their own Release build, -O2, no
# FUT_DEBUG) and the peers (from a writable copy, as peers/run_all.sh does),
# then runs every benchmark fut has, rep-major (every benchmark once, then
# again, ...), each (benchmark, peer, config) in a fresh process, fut's row
# next to its reference rows. Prints every RESULT line on stdout, then the
# ratio table (bench/summarize.py); both are kept in bench/results/<stamp>.txt
# and the stderr of every process in bench/results/<stamp>.log.
#
#   bench/run.sh                        REPS=3, everything fut has
#   ONLY='^(curl_get|hiredis_get|pg_select1)$'
#                                       the client benchmarks (issue 32):
#                                       fut's libcurl, hiredis and libpq
#                                       adapters against libcurl's
#                                       curl_multi_poll loop, hiredis on
#                                       libuv and pgbench
#   REPS=5 bench/run.sh
#   ONLY='spawn|oneshot' bench/run.sh   regex on benchmark names
#   ONLY=tls                            the TLS rows of issue 33 only
#                                       (= '^(https_wrk|tls_handshakes)$';
#                                       see "TLS rows" below): fut's
#                                       https_hello against nginx, and fut's
#                                       http_hello for the HTTPS/HTTP ratio
#   HS_SECS=5 HS_CONNS=50               tls_handshakes' duration and
#                                       concurrent connections
#   NO_WRK=1                            skip http_wrk
#   WRK_SECS=5                          duration of each wrk run
#   ECHO1K_TOTAL=500000                 round trips of each tcp_echo_1k run
#   SYSCALLS=auto                       how the servers' syscalls are
#                                       counted: perf (tracepoints), strace,
#                                       none; auto = perf if it can, else
#                                       strace
#   NO_GO=1                             no Go server rows (default: when
#                                       Go is built)
#   GO_ALL=1                            also the Go peer on every benchmark it
#                                       has (default: only where a target
#                                       names Go: mpsc_*; the servers: see
#                                       NO_GO)
#   BUILD_DIR=<repo>/build-bench        fut's build directory
#   FUT_LTO=ON                          fut built with link-time optimization
#                                       (-DFUT_LTO, gcc), as the Tokio peer is
#                                       built with thin LTO; OFF: without
#   PEERS_SRC=<repo>/../shared/peers    the peers' sources (may be read-only)
#   PEERS_WORKDIR=/tmp/fut-peers        where the peers are copied and built
#   FLAVORS='ct mt2'                    fut's flavors to run (default: every
#                                       one a program lists); each fut row is
#                                       followed by Tokio in the same config,
#                                       xthread_wake's (mt2, mt2nospin: the
#                                       park spin off) by Tokio's and the C
#                                       floors
#
# What fut has is asked, never assumed: every program build-bench/bench/bench_*
# answers '<prog> list' with "<name> <flavor>" lines (bench/common.h), and
# '<prog> bench <name> <flavor>' runs one; exit 77 = unsupported (skipped).
# The servers (tcp_echo, tcp_echo_1k, http_wrk): fut's examples echo_server,
# echo_fiber and http_hello on each I/O backend (FUT_IO_BACKEND), Tokio,
# libuv, the floor (peer=floor, config=epoll|uring), nginx (http_wrk) and Go, each driven by the peers' loadgen or by wrk
# as peers/run_all.sh does, twice: a timed run and a syscall-count run (see
# "server rows" below and bench/servers.sh). A server that does not start
# (exit 77: the build lacks the flavor; a backend the kernel or the build
# does not have) gives a SKIP line saying why, and the run goes on.
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(dirname "$HERE")
REPS=${REPS:-3}
ONLY=${ONLY:-.}
[ "$ONLY" = tls ] && ONLY='^(https_wrk|tls_handshakes)$'
WRK_SECS=${WRK_SECS:-5}
ECHO1K_TOTAL=${ECHO1K_TOTAL:-500000}
BUILD=${BUILD_DIR:-$ROOT/build-bench}
PEERS_SRC=${PEERS_SRC:-$ROOT/../shared/peers}
# from a worktree under /work/wt/<name>: the peers are two levels up
[ -d "$PEERS_SRC" ] || [ ! -d "$ROOT/../../shared/peers" ] || PEERS_SRC=$ROOT/../../shared/peers
PEERS=${PEERS_WORKDIR:-${TMPDIR:-/tmp}/fut-peers}
export PATH="$HOME/.cargo/bin:/usr/lib/go/bin:$PATH"

STAMP=$(date +%Y%m%d-%H%M%S)
mkdir -p "$HERE/results"
OUT=$HERE/results/$STAMP.txt
LOG=$HERE/results/$STAMP.log
: >"$OUT"
: >"$LOG"

say() { echo "$*" >&2; }
die() { say "run.sh: $*"; exit 1; }
note() { echo "# $*" >>"$OUT"; say "$*"; }

# ----------------------------------------------------------- Debian packages
# What the benchmarks use beyond the peers' packages (peers/setup.sh, below):
# nginx-light (http_wrk's nginx row), wrk, strace and perf (linux-perf: the
# syscall counts), valgrind (bench/callgrind_echo.sh), ss (iproute2: whose
# port is whose), liburing-dev (fut's io_uring backend, found at configure);
# the client benchmarks (curl_get, hiredis_get): libcurl4-openssl-dev and
# libhiredis-dev (fut's adapters and their references), libuv1-dev
# (hiredis_get's reference, bench/hiredis_libuv.c), redis-server (its
# server; curl_get's is nginx); pg_select1: libpq-dev (fut's adapter),
# postgresql (PostgreSQL 15: the server, initdb, pgbench - the reference);
# https_wrk and tls_handshakes (issue 33): libssl-dev (libfut-tls,
# https_hello, bench/tls_hsload) and openssl (the certificates).
# Installed when missing, as root; nothing is done when all are there.
BENCH_DEBS="nginx-light wrk strace linux-perf valgrind iproute2 liburing-dev
libcurl4-openssl-dev libhiredis-dev libuv1-dev redis-server libpq-dev
postgresql libssl-dev openssl"
missing_debs() { for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || echo "$p"; done; }
MISSING_DEBS=$(missing_debs $BENCH_DEBS | tr '\n' ' ')
if [ -n "${MISSING_DEBS// /}" ] && [ "$(id -u)" != 0 ]; then
    say "warning: missing Debian packages: $MISSING_DEBS(run as root to install them; what needs them is skipped)"
elif [ -n "${MISSING_DEBS// /}" ]; then
    say "== apt-get install $MISSING_DEBS"
    # shellcheck disable=SC2086 # a list of package names
    { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y $MISSING_DEBS; } >>"$LOG" 2>&1 ||
        die "apt-get install $MISSING_DEBS failed (see $LOG)"
fi
command -v ss >/dev/null 2>&1 || die "ss (iproute2) is needed: it tells whose port is whose"

# ----------------------------------------------------------------- build fut
say "== build fut ($BUILD)"
configure() {
    cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
        "-DCMAKE_C_FLAGS_RELEASE=-O2 -DNDEBUG" -DFUT_DEBUG_CHECKS=OFF \
        -DFUT_BUILD_TESTS=OFF -DFUT_BUILD_MC=OFF -DFUT_BUILD_EXAMPLES="$1" \
        -DFUT_BUILD_BENCH=ON -DFUT_LTO="${FUT_LTO:-ON}" >>"$LOG" 2>&1
}
if ! configure ON; then
    say "warning: configuring with the examples failed; the servers' rows are skipped (see $LOG)"
    configure OFF || die "cmake configure failed (see $LOG)"
fi
cmake --build "$BUILD" --target fut_benches >>"$LOG" 2>&1 ||
    die "building the benchmarks failed (see $LOG)"
TARGETS=$(ninja -C "$BUILD" -t targets all 2>/dev/null | sed -n 's/^\([^:]*\):.*/\1/p')
for t in echo_server echo_fiber http_hello https_hello; do
    if echo "$TARGETS" | grep -qx "examples/$t\|$t"; then
        cmake --build "$BUILD" --target "$t" >>"$LOG" 2>&1 ||
            say "warning: building $t failed; its rows are skipped (see $LOG)"
    fi
done

# -------------------------------------------------------------- build peers
# Only when a benchmark of the peers' list (ORDER, below) is selected: the
# TLS and client rows do not use them.
NEED_PEERS=0
for b in spawn_many yield_many ping_pong chained_spawn oneshot oneshot_local \
    mpsc_1p1c mpsc_4p1c timers idle_task_pending idle_task_oneshot scope_join \
    mutex_contended xthread_wake tcp_echo tcp_echo_1k http_wrk; do
    echo "$b" | grep -Eq -- "$ONLY" && NEED_PEERS=1
done
. "$HERE/peers.sh"
if [ $NEED_PEERS = 0 ]; then
    say "== peers not built: no benchmark of theirs is selected"
else
    peers_build || die "$PEERS_NOTE"
fi
HAVE_GO=0
if [ $NEED_PEERS = 1 ] && command -v go >/dev/null 2>&1; then
    (cd "$PEERS/go" && go build -o gobench .) >>"$LOG" 2>&1 && HAVE_GO=1
fi
HAVE_WRK=0
command -v wrk >/dev/null 2>&1 && [ -z "${NO_WRK:-}" ] && HAVE_WRK=1
HAVE_NGINX=0
command -v nginx >/dev/null 2>&1 && HAVE_NGINX=1

TOKIO=$PEERS/tokio/target/release/tokio-peer-bench
UV=$PEERS/libuv/uvbench
FLOOR=$PEERS/baseline_c/floor
GOB=$PEERS/go/gobench
LOADGEN=$PEERS/loadgen/loadgen
XTHREAD=$PEERS/baseline_c/xthread
CLK_TCK=$(getconf CLK_TCK)
# tcp_echo_1k: 1,000 connections in the load generator, as many in the server
ulimit -n 20000 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null

# Benchmarks of the peers, in the order of the table.
ORDER="spawn_many yield_many ping_pong chained_spawn oneshot oneshot_local
mpsc_1p1c mpsc_4p1c timers idle_task_pending idle_task_oneshot scope_join
mutex_contended xthread_wake tcp_echo tcp_echo_1k http_wrk https_wrk
tls_handshakes"
SERVER_BENCHES=" tcp_echo tcp_echo_1k http_wrk "
TLS_BENCHES=" https_wrk tls_handshakes "
CLIENT_BENCHES=" curl_get hiredis_get pg_select1 "
TOKIO_BENCHES=" spawn_many yield_many ping_pong chained_spawn oneshot oneshot_local mpsc_1p1c mpsc_4p1c timers idle_task_pending idle_task_oneshot scope_join mutex_contended "
GO_BENCHES=" spawn_many yield_many ping_pong chained_spawn oneshot oneshot_local mpsc_1p1c mpsc_4p1c timers idle_task_pending idle_task_oneshot xthread_wake "

# ---------------------------------------------------- what fut has (probe)
# FUT_ROWS: one line "<bench> <flavor> <command...>" per fut row.
FUT_ROWS=""
for prog in "$BUILD"/bench/bench_*; do
    [ -f "$prog" ] && [ -x "$prog" ] || continue
    while read -r name flavor; do
        [ -n "$name" ] && [ -n "$flavor" ] || continue
        if echo "$FUT_ROWS" | grep -q "^$name $flavor "; then
            say "warning: $name $flavor offered by two programs; using the first"
            continue
        fi
        FUT_ROWS+="$name $flavor $prog bench $name $flavor"$'\n'
    done < <("$prog" list 2>>"$LOG")
done
# ---- sync benchmarks (bench/bench_sync.c, issue 5) -------------------------
# mpsc_1p1c / mpsc_4p1c (ct, mt2: each followed by Tokio in the same config
# and Go's channels, GOMAXPROCS 1 / 2) and mutex_contended (ct, mt2, against
# Tokio) run through the rows above like every other benchmark; this only
# says so when the program that has them is missing from the build.
if [ ! -x "$BUILD/bench/bench_sync" ]; then
    say "warning: $BUILD/bench/bench_sync was not built: mpsc_1p1c, mpsc_4p1c and mutex_contended will be listed as not in fut yet"
fi
# ---- end of sync benchmarks -------------------------------------------------
fut_flavors() { echo "$FUT_ROWS" | awk -v b="$1" '$1 == b { print $2 }'; }
fut_cmd() { echo "$FUT_ROWS" | awk -v b="$1" -v f="$2" '$1 == b && $2 == f { $1 = ""; $2 = ""; sub(/^  /, ""); print; exit }'; }
sel() { echo "$1" | grep -Eq -- "$ONLY"; }
has() { case "$1" in *" $2 "*) return 0 ;; esac; return 1; }

RUN_BENCHES=""
MISSING=""
for b in $ORDER; do
    sel "$b" || continue
    if [ -n "$(fut_flavors "$b")" ] || has "$SERVER_BENCHES$TLS_BENCHES" "$b"; then
        if [[ $b == http*_wrk ]] && [ $HAVE_WRK = 0 ]; then continue; fi
        RUN_BENCHES+="$b "
    else
        MISSING+="$b "
    fi
done
# Benchmarks only fut has (no peer): run them too, at the end.
for b in $(echo "$FUT_ROWS" | awk 'NF { print $1 }' | sort -u); do
    case " $ORDER " in *[[:space:]]$b[[:space:]]*) ;; *) sel "$b" && RUN_BENCHES+="$b " ;; esac
done

note "fut bench run $STAMP: REPS=$REPS ONLY=$ONLY FLAVORS=${FLAVORS:-all}"
note "fut $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')" \
    "($(git -C "$ROOT" status --short 2>/dev/null | wc -l) changed files in the tree)," \
    "$(nproc) CPUs, load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
note "running: ${RUN_BENCHES:-nothing}"
[ -n "$MISSING" ] && note "not in fut yet: $MISSING"
[ -n "$RUN_BENCHES" ] || die "no benchmark selected"

# ------------------------------------------------------------------ runners
emit() { echo "$1"; echo "$1" >>"$OUT"; }

# run_bench CMD... : one benchmark process; keeps its RESULT line(s)
run_bench() {
    local out rc
    echo "--- $*" >>"$LOG"
    out=$(timeout 300 "$@" 2>>"$LOG"); rc=$?
    if [ $rc -eq 77 ]; then say "skip (unsupported): $*"; return; fi
    if [ $rc -ne 0 ]; then say "FAILED (rc=$rc): $*"; echo "FAILED (rc=$rc): $*" >>"$LOG"; fi
    echo "$out" | grep '^RESULT ' | while read -r l; do emit "$l"; done
}

# -------------------------------------------------------------- server rows
# Every server row is two runs of a fresh server process under the same
# load: the timed run (rate and latency from the load generator; the
# server's user and system CPU from /proc/PID/stat around the load) and
# the count run (every syscall the server's threads enter, counted by
# bench/servers.sh: perf stat on the syscall tracepoints, or strace; both
# slow the server, hence a run of its own). One RESULT line carries both:
# server_cpu_us_per_op (user+system), server_user_us_per_op,
# server_syscalls_per_op and server_syscalls_top (the syscalls entered
# most, per op; 'other' = those not counted by name). Both figures cover
# the whole load, connecting and the load generator's warm-up included
# (20 round trips per connection: 0.5% of tcp_echo's, 4% of tcp_echo_1k's),
# the same for every server.
. "$HERE/servers.sh"
# (only by this shell: the subshells of $(...) would run it too)
trap '[ "$BASHPID" = $$ ] && rm -rf "$SRV_TMP"' EXIT
COUNTER=$(srv_counter_pick "${SYSCALLS:-auto}")

# skip_row BENCH PEER CONFIG NOTE: the row was not measured, and why
skip_row() {
    emit "SKIP bench=$1 peer=$2 config=$3 note=$(echo "$4" | tr -s '\n\t ' ' ' | sed 's/ *$//')"
}

field() { echo "$1" | sed -n "s/.* $2=\([^ ]*\).*/\1/p"; }

# drive BENCH PEER CONFIG: BENCH's load against SRV_PORT, as a RESULT line
# (TLS_LOAD1 set: with the 1-minute load average after it, load1=).
drive() {
    if [ -n "${TLS_LOAD1:-}" ]; then
        local l
        l=$(TLS_LOAD1="" drive "$@")
        [ -n "$l" ] && echo "$l load1=$(cut -d' ' -f1 /proc/loadavg)"
        return
    fi
    case "$1" in
    tcp_echo) srv_load_echo "$SRV_PORT" "$2" "$3" 50 200000 tcp_echo ;;
    tcp_echo_1k) srv_load_echo "$SRV_PORT" "$2" "$3" 1000 "$ECHO1K_TOTAL" tcp_echo_1k ;;
    http_wrk) srv_load_http "$SRV_PORT" "$2" "$3" ;;
    https_wrk) srv_load_http "$SRV_PORT" "$2" "$3" https_wrk https ;;
    tls_handshakes)
        timeout $((${HS_SECS:-5} + 60)) "$BUILD/bench/tls_hsload" "$SRV_PORT" "$2" "$3" \
            "$TLS_KEYNAME" 2>>"$LOG" | grep '^RESULT ' ;;
    esac
}

# count_fields BENCH PEER CONFIG MODE CMD...: the count run; prints the
# syscall fields of the row (nothing, with a warning, when it failed).
count_fields() {
    local b=$1 peer=$2 cfg=$3 mode=$4 line="" ops
    shift 4
    [ "$COUNTER" != none ] || return 0
    if ! srv_start "$mode" 10 "$@"; then
        say "warning: syscall count of $b $peer $cfg: $SRV_NOTE"
        return 0
    fi
    CNT_TOTAL=""
    if srv_count_start "$COUNTER" "$SRV_PID"; then
        line=$(drive "$b" "$peer" "$cfg")
        srv_count_stop || CNT_TOTAL=""
    fi
    srv_stop
    ops=$(field "$line" ops)
    if [ -z "$CNT_TOTAL" ] || [ -z "$ops" ] || [ "$ops" = 0 ]; then
        say "warning: syscall count of $b $peer $cfg: ${SRV_NOTE:-the load failed}"
        return 0
    fi
    echo "$CNT_BY" | awk -v total="$CNT_TOTAL" -v n="$ops" -v how="$COUNTER" '
        NF == 2 { named += $1; if (k < 4) top = top sep $2 ":" sprintf("%.2f", $1 / n); sep = ","; k++ }
        END {
            if (total - named > 0.005 * n) top = top sep "other:" sprintf("%.2f", (total - named) / n)
            printf " server_syscalls_per_op=%.3f server_syscalls_top=%s syscall_counter=%s count_ops=%d", total / n, (top == "" ? "-" : top), how, n
        }'
}

# server_row BENCH PEER CONFIG MODE CMD...: the timed run, the count run,
# one RESULT line (or a SKIP line). MODE: srv_start's (bench/servers.sh).
server_row() {
    local b=$1 peer=$2 cfg=$3 mode=$4 asked="" said line u0 s0 u1 s1 ops cpu
    shift 4
    if [ "$1" = env ]; then
        case "$2" in FUT_IO_BACKEND=*) asked=${2#*=} ;; esac
    fi
    if ! srv_start "$mode" 10 "$@"; then
        [ "$SRV_RC" = 77 ] && SRV_NOTE="the build lacks this flavor (exit 77)"
        skip_row "$b" "$peer" "$cfg" "$SRV_NOTE"
        return
    fi
    read -r u0 s0 <<<"$(srv_cpu "$SRV_PID")"
    line=$(drive "$b" "$peer" "$cfg")
    read -r u1 s1 <<<"$(srv_cpu "$SRV_PID")"
    said=$(srv_backend_said)
    srv_stop
    if [ -z "$line" ]; then
        skip_row "$b" "$peer" "$cfg" "the load failed (see $LOG)"
        return
    fi
    if [ -n "$asked" ] && [ -n "$said" ] && [ "$said" != "$asked" ]; then
        skip_row "$b" "$peer" "$cfg" "FUT_IO_BACKEND=$asked, but the server said backend: $said"
        return
    fi
    ops=$(field "$line" ops)
    cpu=$(awk -v u=$((u1 - u0)) -v s=$((s1 - s0)) -v n="$ops" 'BEGIN {
        printf "server_cpu_ms=%d server_cpu_us_per_op=%.2f server_user_us_per_op=%.2f",
               u + s, n ? (u + s) * 1000 / n : 0, n ? u * 1000 / n : 0 }')
    emit "$line $cpu${asked:+ io_backend=$asked}$(count_fields "$b" "$peer" "$cfg" "$mode" "$@")"
}

# fut_row BENCH CONFIG BACKEND EXAMPLE ARGS...: one of fut's examples (they
# take [--workers N] PORT and print the port they bound for PORT 0).
fut_row() {
    local b=$1 cfg=$2 be=$3 bin=$BUILD/examples/$4
    shift 4
    if [ ! -x "$bin" ]; then
        skip_row "$b" fut "$cfg" "$bin was not built"
        return
    fi
    server_row "$b" fut "$cfg" print env FUT_IO_BACKEND="$be" "$bin" "$@"
}

# server_rows BENCH: fut's rows (epoll, then io_uring, in each config),
# then every peer's (the references: Tokio, libuv, nginx; Go for comparison).
server_rows() {
    local b=$1 kind=echo ex=echo_server fl cfg
    [ "$b" = http_wrk ] && kind=http ex=http_hello
    for fl in ct mt2; do
        cfg=$(cfg_of $fl)
        # shellcheck disable=SC2046 # the workers option is two words or none
        fut_row "$b" "$cfg" epoll $ex $(server_args $fl)
        # shellcheck disable=SC2046
        fut_row "$b" "${cfg}_uring" io_uring $ex $(server_args $fl)
    done
    if [ $kind = echo ]; then
        fut_row "$b" current_thread_fiber epoll echo_fiber
        fut_row "$b" current_thread_fiber_uring io_uring echo_fiber
    fi
    for fl in ct mt1 mt2; do
        server_row "$b" tokio "$(cfg_of $fl)" probe "$TOKIO" "$kind-server" "$fl"
    done
    server_row "$b" libuv default_loop probe "$UV" "$kind-server"
    # The floor: a hand-written single-threaded server on each kernel
    # interface, no runtime (peers/baseline_c/floor.c; built with liburing)
    if [ -x "$FLOOR" ]; then
        server_row "$b" floor epoll probe "$FLOOR" epoll "$kind"
        server_row "$b" floor uring probe "$FLOOR" uring "$kind"
    fi
    if [ $kind = http ] && [ $HAVE_NGINX = 1 ]; then
        server_row "$b" nginx worker_processes1 probe srv_nginx
    fi
    if [ $HAVE_GO = 1 ] && [ -z "${NO_GO:-}" ]; then
        server_row "$b" go gomaxprocs1 probe env GOMAXPROCS=1 "$GOB" "$kind-server"
        server_row "$b" go gomaxprocs2 probe env GOMAXPROCS=2 "$GOB" "$kind-server"
    fi
}

server_args() { case "$1" in mt1) echo --workers 1 ;; mt2) echo --workers 2 ;; esac; }
cfg_of() { case "$1" in ct) echo current_thread ;; mt1) echo multi_thread_w1 ;; mt2) echo multi_thread_w2 ;; esac; }
go_procs() { case "$1" in ct | mt1) echo 1 ;; *) echo 2 ;; esac; }

# ------------------------------------------------------------- client rows
# curl_get, hiredis_get (issue 32): fut's adapter program (bench_curl,
# bench_hiredis: '<prog> bench <name> ct'), once with FUT_IO_BACKEND=epoll
# (config=current_thread) and once with io_uring (current_thread_uring; a
# build or kernel without it: exit 77, skipped), then its reference program
# (curl_multi_poll: libcurl's curl_multi_poll loop; hiredis_libuv: hiredis
# on libuv), each a fresh process, against ONE server process started
# here for the pair (nginx from srv_nginx's config, or redis-server with
# no persistence: srv_redis), its port in BENCH_PORT. The figure is the
# client's CPU per operation (bench/client.h); each line carries the
# 1-minute load average read at the end of its timed part (load1=).
# pg_select1: PostgreSQL 15 on a cluster made for the rep (srv_pg_init:
# initdb in a temporary directory, removed after), its connection string
# (Unix socket) in BENCH_PG; fut's program runs twice per backend, the
# second time with BENCH_PG_PIPELINE=1 (config=current_thread_pipelined);
# the reference is pgbench_run (pgbench -M prepared -c 8 -j 1).
client_rows() {
    local b=$1 srv ref peer cfg fl be pipe conn
    local modes="0"
    case "$b" in
    curl_get) srv=srv_nginx ref=curl_multi_poll peer=curl cfg=multi_poll ;;
    hiredis_get) srv=srv_redis ref=hiredis_libuv peer=hiredis cfg=libuv ;;
    pg_select1)
        srv=srv_pg ref=pgbench_run peer=pgbench cfg=prepared modes="0 1"
        if ! srv_pg_init; then
            skip_row "$b" fut current_thread "the server did not start: $SRV_NOTE"
            return
        fi
        ;;
    esac
    if ! srv_start probe 10 "$srv"; then
        skip_row "$b" fut current_thread "the server did not start: $SRV_NOTE"
        [ "$b" = pg_select1 ] && srv_pg_fini
        return
    fi
    conn="host=${PG_DIR:-} port=$SRV_PORT user=postgres dbname=postgres"
    for fl in $(fut_flavors "$b"); do
        [ -z "${FLAVORS:-}" ] || has " $FLAVORS " "$fl" || continue
        for pipe in $modes; do
            for be in epoll io_uring; do
                # shellcheck disable=SC2046 # the command is a word list
                run_bench env BENCH_PORT="$SRV_PORT" BENCH_PG="$conn" \
                    BENCH_PG_PIPELINE="$pipe" FUT_IO_BACKEND=$be $(fut_cmd "$b" "$fl")
            done
        done
    done
    if [ -x "$BUILD/bench/$ref" ]; then
        run_bench env BENCH_PORT="$SRV_PORT" BENCH_PG="$conn" PGBENCH="$PG_BIN/pgbench" \
            "$BUILD/bench/$ref"
    else
        skip_row "$b" "$peer" "$cfg" "$BUILD/bench/$ref was not built"
    fi
    srv_stop
    [ "$b" = pg_select1 ] && srv_pg_fini
}

# --------------------------------------------------------------- TLS rows
# Issue 33: https_wrk (wrk -t1 -c50 over TLS 1.3, keep-alive, for WRK_SECS;
# ECDSA P-256) and tls_handshakes (bench/tls_hsload: HS_CONNS connections
# doing full handshakes back to back for HS_SECS, no resumption, then
# close_notify; ECDSA P-256 and RSA-2048: config <server config>_ecdsa /
# _rsa, key= in the line). The servers: examples/https_hello in
# current_thread (epoll), current_thread_uring (FUT_IO_BACKEND=io_uring)
# and multi_thread_w2 (--workers 2, epoll), and nginx (srv_nginx_tls: one
# process, worker_processes 1, TLS 1.3 only, the same certificate and
# default ciphers), each row a fresh server through server_row (server CPU
# per op from /proc/PID/stat, the syscall count run). After https_wrk,
# fut's plain http_hello (current_thread, epoll) as http_wrk: the
# denominator of "HTTPS requests/s vs fut's own HTTP, one worker". Every
# line carries load1= (the 1-minute load average after the load: the
# machine is shared). The certificates (openssl req, as test/tls_certs.h
# makes them) are made once per run in SRV_TMP.
TLS_DIR=""
tls_certs() {
    [ -n "$TLS_DIR" ] && return 0
    TLS_DIR=$SRV_TMP/certs
    mkdir -p "$TLS_DIR"
    local k
    for k in "ecdsa ec -pkeyopt ec_paramgen_curve:P-256" "rsa rsa:2048"; do
        # shellcheck disable=SC2086 # the key options are words
        set -- $k
        local name=$1
        shift
        openssl req -x509 -newkey "$@" -nodes -keyout "$TLS_DIR/$name.key" \
            -out "$TLS_DIR/$name.crt" -days 2 -subj /CN=localhost \
            -addext subjectAltName=DNS:localhost,IP:127.0.0.1 >>"$LOG" 2>&1 ||
            return 1
    done
}

# tls_use NAME: the certificate the next rows serve (TLS_CRT, TLS_KEY).
tls_use() { TLS_KEYNAME=$1 TLS_CRT=$TLS_DIR/$1.crt TLS_KEY=$TLS_DIR/$1.key; }

# tls_rows BENCH: the rows above, in that order.
tls_rows() {
    local b=$1 k sfx
    TLS_LOAD1=1
    if ! tls_certs; then
        skip_row "$b" fut current_thread "openssl req failed (see $LOG)"
        return
    fi
    if [ "$b" = tls_handshakes ] && [ ! -x "$BUILD/bench/tls_hsload" ]; then
        skip_row "$b" fut current_thread "$BUILD/bench/tls_hsload was not built (FUT_TLS off?)"
        return
    fi
    for k in ecdsa rsa; do
        [ "$b" = https_wrk ] && [ $k = rsa ] && continue
        tls_use $k
        sfx=""
        [ "$b" = tls_handshakes ] && sfx=_$k
        fut_row "$b" "current_thread$sfx" epoll https_hello --cert "$TLS_CRT" --key "$TLS_KEY"
        fut_row "$b" "current_thread_uring$sfx" io_uring https_hello --cert "$TLS_CRT" --key "$TLS_KEY"
        fut_row "$b" "multi_thread_w2$sfx" epoll https_hello --workers 2 --cert "$TLS_CRT" --key "$TLS_KEY"
        if [ $HAVE_NGINX = 1 ]; then
            server_row "$b" nginx "worker_processes1$sfx" probe srv_nginx_tls
        else
            skip_row "$b" nginx "worker_processes1$sfx" "no nginx (Debian: nginx-light)"
        fi
    done
    [ "$b" = https_wrk ] && fut_row http_wrk current_thread epoll http_hello
    TLS_LOAD1=""
}

# run_one BENCH: fut's rows of BENCH, each followed by its reference rows.
run_one() {
    local b=$1 fl
    if has "$TLS_BENCHES" "$b"; then
        tls_rows "$b"
        return
    fi
    if has "$SERVER_BENCHES" "$b"; then
        server_rows "$b"
        return
    fi
    if has "$CLIENT_BENCHES" "$b"; then
        client_rows "$b"
        return
    fi
    for fl in $(fut_flavors "$b"); do
        [ -z "${FLAVORS:-}" ] || has " $FLAVORS " "$fl" || continue
        # shellcheck disable=SC2046 # the command is a word list
        run_bench $(fut_cmd "$b" "$fl")
        if [ "$b" != xthread_wake ] && has "$TOKIO_BENCHES" "$b"; then
            run_bench "$TOKIO" bench "$b" "$fl"
        fi
        if [ $HAVE_GO = 1 ] && [ "$b" != xthread_wake ] && has "$GO_BENCHES" "$b" &&
            { [ -n "${GO_ALL:-}" ] || [[ $b == mpsc_* ]]; }; then
            run_bench env GOMAXPROCS="$(go_procs "$fl")" "$GOB" bench "$b"
        fi
    done
    case "$b" in
    timers) run_bench "$UV" timers ;;
    xthread_wake)
        run_bench "$TOKIO" bench xthread_wake
        for m in futex eventfd; do run_bench "$XTHREAD" $m; done
        if [ $HAVE_GO = 1 ] && [ -n "${GO_ALL:-}" ]; then run_bench env GOMAXPROCS=2 "$GOB" bench xthread_wake; fi
        ;;
    esac
}

for rep in $(seq 1 "$REPS"); do
    say "== rep $rep/$REPS"
    for b in $RUN_BENCHES; do run_one "$b"; done
done
note "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"

say "== summary (raw: $OUT, log: $LOG)"
TABLE=$(python3 "$HERE/summarize.py" --missing "$MISSING" "$OUT") || die "summarize.py failed"
echo >>"$OUT"
echo "$TABLE" >>"$OUT"
echo
echo "$TABLE"
