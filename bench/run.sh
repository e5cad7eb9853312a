#!/usr/bin/env bash
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
#   REPS=5 bench/run.sh
#   ONLY='spawn|oneshot' bench/run.sh   regex on benchmark names
#   NO_WRK=1                            skip http_wrk
#   WRK_SECS=5                          duration of each wrk run
#   GO_ALL=1                            also the Go peer on every benchmark it
#                                       has (default: only where a target
#                                       names Go: mpsc_*)
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
# The servers examples/echo_server and examples/http_hello, when built, are
# started as '<server> <ct|mt1|mt2> <port>' (the Tokio peer's order) and
# driven by the peers' loadgen and by wrk exactly as peers/run_all.sh does;
# a server that exits 77 before listening does not have that flavor.
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(dirname "$HERE")
REPS=${REPS:-3}
ONLY=${ONLY:-.}
WRK_SECS=${WRK_SECS:-5}
BUILD=${BUILD_DIR:-$ROOT/build-bench}
PEERS_SRC=${PEERS_SRC:-$ROOT/../shared/peers}
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
for t in echo_server http_hello; do
    if echo "$TARGETS" | grep -qx "examples/$t\|$t"; then
        cmake --build "$BUILD" --target "$t" >>"$LOG" 2>&1 ||
            say "warning: building $t failed; its rows are skipped (see $LOG)"
    fi
done

# -------------------------------------------------------------- build peers
need_pkg() { dpkg -s "$1" >/dev/null 2>&1; }
if ! need_pkg librust-tokio-dev || ! need_pkg libuv1-dev; then
    [ "$(id -u)" = 0 ] || die "the peers' packages are missing: run $PEERS_SRC/setup.sh as root"
    say "== peers' packages missing: $PEERS_SRC/setup.sh"
    bash "$PEERS_SRC/setup.sh" >>"$LOG" 2>&1 || die "setup.sh failed (see $LOG)"
fi
say "== build peers ($PEERS)"
mkdir -p "$PEERS" && cp -a "$PEERS_SRC"/. "$PEERS"/ && chmod -R u+w "$PEERS" ||
    die "cannot copy the peers to $PEERS"
for d in loadgen libuv baseline_c; do
    make -s -C "$PEERS/$d" >>"$LOG" 2>&1 || die "make -C $PEERS/$d failed"
done
(cd "$PEERS/tokio" && cargo build --release --offline -q) >>"$LOG" 2>&1 ||
    die "building the Tokio peer failed (see $LOG)"
HAVE_GO=0
if command -v go >/dev/null 2>&1; then
    (cd "$PEERS/go" && go build -o gobench .) >>"$LOG" 2>&1 && HAVE_GO=1
fi
HAVE_WRK=0
command -v wrk >/dev/null 2>&1 && [ -z "${NO_WRK:-}" ] && HAVE_WRK=1

TOKIO=$PEERS/tokio/target/release/tokio-peer-bench
UV=$PEERS/libuv/uvbench
GOB=$PEERS/go/gobench
LOADGEN=$PEERS/loadgen/loadgen
XTHREAD=$PEERS/baseline_c/xthread
CLK_TCK=$(getconf CLK_TCK)

# Benchmarks of the peers, in the order of the table.
ORDER="spawn_many yield_many ping_pong chained_spawn oneshot oneshot_local
mpsc_1p1c mpsc_4p1c timers idle_task_pending idle_task_oneshot scope_join
mutex_contended xthread_wake tcp_echo http_wrk"
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
SERVERS=""   # "<bench> <kind> <binary>"
for s in "tcp_echo echo echo_server" "http_wrk http http_hello"; do
    set -- $s
    for bin in "$BUILD/examples/$3" "$BUILD/$3"; do
        if [ -x "$bin" ]; then SERVERS+="$1 $2 $bin"$'\n'; break; fi
    done
done

fut_flavors() { echo "$FUT_ROWS" | awk -v b="$1" '$1 == b { print $2 }'; }
fut_cmd() { echo "$FUT_ROWS" | awk -v b="$1" -v f="$2" '$1 == b && $2 == f { $1 = ""; $2 = ""; sub(/^  /, ""); print; exit }'; }
server_of() { echo "$SERVERS" | awk -v b="$1" '$1 == b { print $2, $3 }'; }
sel() { echo "$1" | grep -Eq -- "$ONLY"; }
has() { case "$1" in *" $2 "*) return 0 ;; esac; return 1; }

RUN_BENCHES=""
MISSING=""
for b in $ORDER; do
    sel "$b" || continue
    if [ -n "$(fut_flavors "$b")" ] || [ -n "$(server_of "$b")" ]; then
        if [ "$b" = http_wrk ] && [ $HAVE_WRK = 0 ]; then continue; fi
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

proc_cpu_ms() { awk -v t="$CLK_TCK" '{printf "%.0f", ($14+$15)*1000/t}' "/proc/$1/stat" 2>/dev/null || echo 0; }
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

PORT=7600
# next_port: the next port nobody listens on (another run may be going on)
next_port() {
    PORT=$((PORT + 1))
    while port_open "$PORT"; do PORT=$((PORT + 1)); done
}

# run_server KIND(echo|http) PEER CONFIG SERVERCMD... (the port is appended)
run_server() {
    local kind=$1 peer=$2 cfg=$3; shift 3
    next_port
    echo "--- $* $PORT" >>"$LOG"
    "$@" "$PORT" 2>>"$LOG" &
    local spid=$! up=0
    for _ in $(seq 1 200); do
        if port_open "$PORT"; then up=1; break; fi
        kill -0 "$spid" 2>/dev/null || break
        sleep 0.05
    done
    if [ $up = 0 ]; then
        local rc=0
        if kill -0 "$spid" 2>/dev/null; then kill "$spid" 2>/dev/null; wait "$spid" 2>/dev/null; rc=-1
        else wait "$spid"; rc=$?; fi
        if [ $rc -eq 77 ]; then say "skip (unsupported): $*"; else say "FAILED: server did not listen (rc=$rc): $*"; fi
        return
    fi
    local c0 c1 line ops
    c0=$(proc_cpu_ms "$spid")
    if [ "$kind" = echo ]; then
        line=$(timeout 150 "$LOADGEN" "$PORT" "$peer" "$cfg" 50 200000 64 2>>"$LOG" | grep '^RESULT ')
    else
        local w
        w=$(timeout $((WRK_SECS + 30)) wrk -t1 -c50 -d"${WRK_SECS}s" --latency "http://127.0.0.1:$PORT/" 2>>"$LOG")
        echo "$w" >>"$LOG"
        line=$(echo "$w" | awk -v peer="$peer" -v cfg="$cfg" -v secs="$WRK_SECS" '
            function us(x) { if (x ~ /us$/) return x+0; if (x ~ /ms$/) return x*1000; if (x ~ /s$/) return x*1e6; return x }
            /requests in/ { n = $1 }
            /Requests\/sec/ { rps = $2 }
            $1 == "50%" { p50 = us($2) }
            $1 == "99%" { p99 = us($2) }
            /Socket errors|Non-2xx/ { err = 1 }
            END { if (rps != "") printf "RESULT bench=http_wrk peer=%s config=%s value=%.0f unit=req/s ops=%d wall_ms=%d conns=50 wrk_threads=1 p50_us=%.1f p99_us=%.1f%s\n", peer, cfg, rps, n, secs*1000, p50, p99, (err ? " wrk_errors=1" : "") }')
    fi
    c1=$(proc_cpu_ms "$spid")
    kill "$spid" 2>/dev/null; wait "$spid" 2>/dev/null
    if [ -z "$line" ]; then say "FAILED: $kind client against $peer $cfg"; return; fi
    ops=$(echo "$line" | sed -n 's/.* ops=\([0-9]*\).*/\1/p')
    emit "$line server_cpu_ms=$((c1 - c0)) server_cpu_us_per_op=$(awk -v c=$((c1 - c0)) -v n="$ops" 'BEGIN{printf "%.2f", n ? c*1000/n : 0}')"
}

server_args() { case "$1" in mt1) echo --workers 1 ;; mt2) echo --workers 2 ;; esac; }
cfg_of() { case "$1" in ct) echo current_thread ;; mt1) echo multi_thread_w1 ;; mt2) echo multi_thread_w2 ;; esac; }
go_procs() { case "$1" in ct | mt1) echo 1 ;; *) echo 2 ;; esac; }

# run_one BENCH: fut's rows of BENCH, each followed by its reference rows.
run_one() {
    local b=$1 fl kind bin
    if [ -n "$(server_of "$b")" ]; then
        read -r kind bin <<<"$(server_of "$b")"
        # fut's servers take [--workers N] PORT (0 = current-thread).
        for fl in ct mt1 mt2; do
            run_server "$kind" fut "$(cfg_of $fl)" "$bin" $(server_args $fl)
        done
        run_server "$kind" tokio current_thread "$TOKIO" "$kind-server" ct
        run_server "$kind" tokio multi_thread_w1 "$TOKIO" "$kind-server" mt1
        run_server "$kind" tokio multi_thread_w2 "$TOKIO" "$kind-server" mt2
        run_server "$kind" libuv default_loop "$UV" "$kind-server"
        if [ $HAVE_GO = 1 ] && [ -n "${GO_ALL:-}" ]; then
            run_server "$kind" go gomaxprocs1 env GOMAXPROCS=1 "$GOB" "$kind-server"
            run_server "$kind" go gomaxprocs2 env GOMAXPROCS=2 "$GOB" "$kind-server"
        fi
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
