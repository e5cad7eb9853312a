#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# fut-redis against redis-server 7.0, the rows of issue 19:
#   redis_get, redis_set   redis-benchmark -c 50 -n 200000 -t get|set -P 1
#                          and -P 16; value = req/s, server_cpu_us_per_op =
#                          user+sys CPU of the server process (all its
#                          threads: /proc/<pid>/stat fields 14+15, as
#                          bench/run.sh measures its servers) per request
#   redis_rss_1m           RSS of the server (VmRSS) after loading 1M keys
#                          of 16-byte values, config p1
# Configs: fut p1_epoll p16_epoll (current-thread), p1_uring p16_uring
# (current-thread, io_uring), p1_uring_w2 (--workers 2, io_uring); redis
# p1 p16 (redis-server --save '' --appendonly no). A fut config whose
# backend cannot be had is skipped with a note (fut-redis says why).
#
#   bench/redis.sh <path of the fut-redis binary>
#   REPS=5 (default)  repetitions, rep-major: every row once, then again
#   REQS=200000 CLIENTS=50   redis-benchmark's -n and -c
#   REDIS_SERVER=redis-server REDIS_BENCHMARK=redis-benchmark
# Builds nothing. Prints RESULT lines on stdout (then their medians as
# '#' lines), notes on stderr. Both servers and the load generator share
# the machine's CPUs: req/s depends on that; CPU per request is the judge.
set -uo pipefail

FUT=${1:?usage: bench/redis.sh <fut-redis binary>}
[ -x "$FUT" ] || { echo "redis.sh: $FUT is not executable" >&2; exit 2; }
REPS=${REPS:-5}
REQS=${REQS:-200000}
CLIENTS=${CLIENTS:-50}
RS=${REDIS_SERVER:-redis-server}
RB=${REDIS_BENCHMARK:-redis-benchmark}
command -v "$RS" >/dev/null && command -v "$RB" >/dev/null &&
    command -v redis-cli >/dev/null ||
    { echo "redis.sh: needs redis-server, redis-benchmark, redis-cli (Debian: redis-server redis-tools)" >&2; exit 77; }
CLK_TCK=$(getconf CLK_TCK)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"; [ -n "${SPID:-}" ] && kill "$SPID" 2>/dev/null' EXIT
ALL=$TMP/results

say() { echo "$*" >&2; }
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
RPORT=7700 # redis-server's ports (fut-redis picks its own: --port 0)
next_port() {
    RPORT=$((RPORT + 1))
    while port_open "$RPORT"; do RPORT=$((RPORT + 1)); done
    PORT=$RPORT
}

# start_fut BACKEND [ARGS...]: starts fut-redis on a free port (it prints
# it); SPID and PORT set; 1 when it exits first (the reason on stderr)
start_fut() {
    local backend=$1 log=$TMP/fut.log; shift
    "$FUT" --port 0 --io-backend "$backend" "$@" 2>"$log" &
    SPID=$!
    for _ in $(seq 1 200); do
        if grep -q "ready to accept" "$log"; then
            PORT=$(sed -n 's/.*listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$log" | head -1)
            return 0
        fi
        kill -0 "$SPID" 2>/dev/null || break
        sleep 0.05
    done
    wait "$SPID" 2>/dev/null
    SKIP_WHY=$(tr '\n' ' ' <"$log")
    SPID=
    return 1
}

start_redis() {
    next_port
    "$RS" --port "$PORT" --bind 127.0.0.1 --save '' --appendonly no \
        --daemonize no >"$TMP/redis.log" 2>&1 &
    SPID=$!
    for _ in $(seq 1 200); do
        port_open "$PORT" && return 0
        sleep 0.05
    done
    say "redis.sh: redis-server did not start: $(cat "$TMP/redis.log")"
    exit 1
}

stop() { kill "$SPID" 2>/dev/null; wait "$SPID" 2>/dev/null; SPID=; }

# row TEST(get|set) PIPELINE PEER CONFIG: one redis-benchmark run against
# the server running now
row() {
    local t=$1 p=$2 peer=$3 cfg=$4 c0 c1 rps
    c0=$(cpu_ticks "$SPID")
    rps=$("$RB" -p "$PORT" -c "$CLIENTS" -n "$REQS" -t "$t" -P "$p" --csv \
        2>>"$TMP/bench.err" | awk -F'"' 'NR == 2 { print $4 }')
    c1=$(cpu_ticks "$SPID")
    if [ -z "$rps" ]; then say "FAILED: $t -P $p against $peer $cfg"; return; fi
    echo "RESULT bench=redis_$t peer=$peer config=$cfg value=${rps%.*}" \
        "unit=req/s server_cpu_us_per_op=$(awk -v c=$((c1 - c0)) \
        -v t="$CLK_TCK" -v n="$REQS" 'BEGIN { printf "%.2f", c * 1e6 / t / n }')" |
        tee -a "$ALL"
}

# rss PEER: loads 1M keys of 16-byte values into the running server
# (redis-cli --pipe), checks DBSIZE and prints its VmRSS
rss() {
    local peer=$1 n
    [ -f "$TMP/load.resp" ] || awk 'BEGIN {
        for (i = 0; i < 1000000; i++) {
            k = sprintf("key:%012d", i)
            printf "*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$16\r\n%016d\r\n", length(k), k, i
        } }' >"$TMP/load.resp"
    redis-cli -p "$PORT" --pipe <"$TMP/load.resp" >/dev/null
    n=$(redis-cli -p "$PORT" DBSIZE)
    [ "$n" = 1000000 ] || { say "FAILED: rss load on $peer: DBSIZE $n"; return; }
    echo "RESULT bench=redis_rss_1m peer=$peer config=p1 value=$(awk '/VmRSS/ { print $2 * 1024 }' "/proc/$SPID/status") unit=bytes" |
        tee -a "$ALL"
}

# the fut configs: name backend args
FUT_CONFIGS="p1_epoll:epoll:1 p16_epoll:epoll:16 p1_uring:io_uring:1 p16_uring:io_uring:16 p1_uring_w2:io_uring:1:--workers:2"

say "redis.sh: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); REPS=$REPS REQS=$REQS CLIENTS=$CLIENTS"
for rep in $(seq 1 "$REPS"); do
    say "== rep $rep/$REPS"
    for c in $FUT_CONFIGS; do
        IFS=: read -r cfg backend pipe a1 a2 <<<"$c"
        if ! start_fut "$backend" ${a1:+$a1 $a2}; then
            [ "$rep" = 1 ] && say "skip fut $cfg: $SKIP_WHY"
            continue
        fi
        row get "$pipe" fut "$cfg"
        row set "$pipe" fut "$cfg"
        stop
    done
    start_redis
    row get 1 redis p1
    row set 1 redis p1
    row get 16 redis p16
    row set 16 redis p16
    stop
done
if start_fut epoll; then rss fut; stop; fi
start_redis
rss redis
stop
if grep -qi "error" "$TMP/bench.err" 2>/dev/null; then
    say "redis-benchmark errors:"; sort -u "$TMP/bench.err" >&2
fi

# medians per (bench, peer, config)
awk '{ k = $2 " " $3 " " $4; v[k] = v[k] " " substr($5, 7)
       for (i = 7; i <= NF; i++) if ($i ~ /^server_cpu_us_per_op=/) c[k] = c[k] " " substr($i, 22) }
     function med(s,   a, n, i, j, t) { n = split(s, a, " ")
         for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
         return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
     END { for (k in v) printf "# median %s value=%s%s\n", k, med(v[k]), (k in c ? " server_cpu_us_per_op=" med(c[k]) : "") }' "$ALL" | sort
