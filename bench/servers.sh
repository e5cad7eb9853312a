# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# Server rows' machinery, sourced by bench/run.sh and bench/callgrind_echo.sh
# (bash; not run by itself): start a server on a loopback port that is its
# own, drive it with the peers' loadgen or wrk, read its CPU, count the
# syscalls its threads enter, stop it; nginx's generated config and
# redis-server's command line (the client rows of run.sh).
#
# The caller sets LOG (a file: every server's stdout and stderr are appended
# to it), LOADGEN (the peers' loadgen) and WRK_SECS, and removes SRV_TMP at
# exit. Nothing here aborts the caller: every failure is a return status
# with SRV_NOTE saying what happened.
#
# Ports: a server that prints the port it bound ("listening on [HOST:]PORT",
# on stdout or stderr: fut's examples) is given port 0 and read back (mode
# 'print'). A server that cannot (the peers print the port they were given,
# nginx takes it from its config) gets a port that nobody listens on, found
# here (mode 'probe'), and is retried on another when it says "in use". In
# both modes the run starts only once `ss` shows the listening socket
# belongs to the server's own pid: another engineer's server on the same
# port is never measured.

SRV_TMP=${SRV_TMP:-$(mktemp -d "${TMPDIR:-/tmp}/fut-bench-srv.XXXXXX")}
SRV_NEXT=$((20000 + RANDOM % 10000)) # below the ephemeral range (32768-)
CLK_TCK=${CLK_TCK:-$(getconf CLK_TCK)}
# The syscalls counted by name (the total counts every one): what a server's
# I/O path enters on either backend.
SRV_SYSCALLS="read write readv writev recvfrom sendto recvmsg sendmsg
accept accept4 close epoll_wait epoll_pwait epoll_pwait2 epoll_ctl
io_uring_enter futex sched_yield clock_nanosleep timerfd_settime poll ppoll"

srv_listening() { [ -n "$(ss -Hltn "sport = :$1" 2>/dev/null)" ]; }
# srv_owns PID PORT: PID's own socket listens on PORT
srv_owns() { ss -Hltnp "sport = :$2" 2>/dev/null | grep -q "pid=$1,"; }

# Sets SRV_NEXT to a port nobody listens on.
srv_free_port() {
    SRV_NEXT=$((SRV_NEXT + 1))
    while [ $SRV_NEXT -ge 32000 ] || srv_listening $SRV_NEXT; do
        SRV_NEXT=$((SRV_NEXT >= 32000 ? 20001 : SRV_NEXT + 1))
    done
}

# The port a server printed in "listening on [HOST:]PORT", if it did.
srv_printed_port() {
    sed -n 's/.*listening on \([^ ]*:\)\{0,1\}\([0-9][0-9]*\).*/\2/p' "$1" | head -1
}

# Appends the server's output to LOG and forgets it.
srv_log_out() {
    [ -n "${SRV_OUT:-}" ] && [ -f "$SRV_OUT" ] || return 0
    cat "$SRV_OUT" >>"$LOG"
    rm -f "$SRV_OUT"
}

# srv_reap PID SECS: waits for PID (a child of this shell) to exit, SIGKILL
# after SECS; sets SRV_RC to its exit status.
srv_reap() {
    local i st
    for ((i = 0; i < $2 * 20; i++)); do
        st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1)
        if [ -z "$st" ] || [ "$st" = Z ]; then break; fi
        sleep 0.05
    done
    [ -n "$st" ] && [ "$st" != Z ] && kill -KILL "$1" 2>/dev/null
    wait "$1" 2>/dev/null
    SRV_RC=$?
}

# srv_wait_listen MODE SECS: 0 once SRV_PID owns SRV_PORT's listener (MODE
# 'print': SRV_PORT is read from the output first); 1 when the server
# exited (SRV_RC, SRV_NOTE) or SECS passed (the server is killed).
srv_wait_listen() {
    local mode=$1 polls=$(($2 * 20)) i p
    for ((i = 0; i < polls; i++)); do
        if [ "$mode" = print ] && [ "$SRV_PORT" = 0 ]; then
            p=$(srv_printed_port "$SRV_OUT")
            [ -n "$p" ] && SRV_PORT=$p
        fi
        if [ "$SRV_PORT" != 0 ] && srv_owns "$SRV_PID" "$SRV_PORT"; then
            return 0
        fi
        if ! kill -0 "$SRV_PID" 2>/dev/null; then
            srv_reap "$SRV_PID" 1
            local last
            last=$(grep -v '^\s*$' "$SRV_OUT" | tail -1 | tr -s '\t ' ' ' | cut -c1-160)
            SRV_NOTE="exited (rc=$SRV_RC) before listening${last:+: $last}"
            return 1
        fi
        sleep 0.05
    done
    kill -TERM "$SRV_PID" 2>/dev/null
    srv_reap "$SRV_PID" 5
    SRV_NOTE="did not listen within $2 s"
    return 1
}

# srv_start MODE SECS CMD... : starts CMD with the port as its last argument
# (see the header for MODE) and waits up to SECS for it to listen. Sets
# SRV_PID, SRV_PORT, SRV_OUT (its stdout+stderr); 1 with SRV_NOTE and
# SRV_RC (77: the server lacks the flavor) when it did not start.
srv_start() {
    local mode=$1 secs=$2
    shift 2
    for _ in 1 2 3; do
        SRV_OUT=$(mktemp "$SRV_TMP/out.XXXXXX")
        if [ "$mode" = print ]; then
            SRV_PORT=0
        else
            srv_free_port
            SRV_PORT=$SRV_NEXT
        fi
        echo "--- server: $* $SRV_PORT" >>"$LOG"
        "$@" "$SRV_PORT" >"$SRV_OUT" 2>&1 &
        SRV_PID=$!
        srv_wait_listen "$mode" "$secs" && return 0
        local inuse=0
        grep -qi 'in use' "$SRV_OUT" && inuse=1
        srv_log_out
        [ "$mode" = probe ] && [ $inuse = 1 ] || return 1
    done
    return 1
}

# srv_stop: SIGTERM (every server here stops on it), SIGKILL after
# SRV_STOP_SECS (5).
srv_stop() {
    kill -TERM "$SRV_PID" 2>/dev/null
    srv_reap "$SRV_PID" "${SRV_STOP_SECS:-5}"
    srv_log_out
}

# srv_cpu PID: "<user ms> <system ms>" of every thread of PID so far.
srv_cpu() {
    awk -v t="$CLK_TCK" '{ printf "%.0f %.0f", $14 * 1000 / t, $15 * 1000 / t }' \
        "/proc/$1/stat" 2>/dev/null || echo "0 0"
}

# The backend the server said it runs on ("backend: NAME", or "listening on
# ADDR (NAME)": examples/https_hello), if it did.
srv_backend_said() {
    sed -n -e 's/.*backend: \([a-z_]*\).*/\1/p' \
        -e 's/.*listening on [^ ]* (\([a-z_]*\)).*/\1/p' "$SRV_OUT" 2>/dev/null | head -1
}

# ------------------------------------------------------------------ loads
# srv_load_echo PORT PEER CONFIG CONNS TOTAL BENCH: the loadgen's RESULT
# line (MSG 64 bytes), named BENCH.
srv_load_echo() {
    timeout 150 "$LOADGEN" "$1" "$2" "$3" "$4" "$5" 64 2>>"$LOG" |
        sed -n "s/^RESULT bench=tcp_echo /RESULT bench=$6 /p"
}

# srv_load_http PORT PEER CONFIG [BENCH SCHEME]: wrk -t1 -c50 for WRK_SECS,
# as a RESULT line named BENCH (http_wrk); SCHEME https: wrk over TLS (its
# OpenSSL client's defaults: TLS 1.3 where the server has it).
srv_load_http() {
    local w
    w=$(timeout $((WRK_SECS + 30)) wrk -t1 -c50 -d"${WRK_SECS}s" --latency \
        "${5:-http}://127.0.0.1:$1/" 2>>"$LOG")
    echo "$w" >>"$LOG"
    echo "$w" | awk -v peer="$2" -v cfg="$3" -v secs="$WRK_SECS" -v bench="${4:-http_wrk}" '
        function us(x) { if (x ~ /us$/) return x+0; if (x ~ /ms$/) return x*1000; if (x ~ /s$/) return x*1e6; return x }
        /requests in/ { n = $1 }
        /Requests\/sec/ { rps = $2 }
        $1 == "50%" { p50 = us($2) }
        $1 == "99%" { p99 = us($2) }
        /Socket errors|Non-2xx/ { err = 1 }
        END { if (rps != "") printf "RESULT bench=%s peer=%s config=%s value=%.0f unit=req/s ops=%d wall_ms=%d conns=50 wrk_threads=1 p50_us=%.1f p99_us=%.1f%s\n", bench, peer, cfg, rps, n, secs*1000, p50, p99, (err ? " wrk_errors=1" : "") }'
}

# ------------------------------------------------------- syscall counting
# Every syscall the server's threads enter, over one load: `perf stat` on
# the raw_syscalls:sys_enter tracepoint (the total) and syscalls:sys_enter_*
# (by name), attached to every thread of the pid and enabled / disabled
# through its control fifo right around the load; or `strace -c -f -p`
# where perf cannot (it stops the server at every syscall: slower, same
# count). Neither counts the work of io_uring's kernel threads (iou-wrk-*,
# iou-sqp-*): they never enter a syscall; io_uring_enter calls are counted.

# srv_counter_pick WANT(auto|perf|strace|none): prints the counter to use.
srv_counter_pick() {
    case "$1" in
    auto)
        if perf stat -e raw_syscalls:sys_enter -- true >/dev/null 2>&1; then echo perf
        elif command -v strace >/dev/null 2>&1; then echo strace
        else echo none; fi ;;
    *) echo "$1" ;;
    esac
}

# srv_count_start COUNTER PID: counting from now (0), or 1 with SRV_NOTE.
srv_count_start() {
    CNT_KIND=$1
    CNT_DIR=$(mktemp -d "$SRV_TMP/count.XXXXXX")
    if [ "$1" = perf ]; then
        local by_name=() n
        for n in $SRV_SYSCALLS; do by_name+=(-e "syscalls:sys_enter_$n"); done
        mkfifo "$CNT_DIR/ctl" "$CNT_DIR/ack"
        perf stat -x, -o "$CNT_DIR/out" -D -1 --control "fifo:$CNT_DIR/ctl,$CNT_DIR/ack" \
            -e raw_syscalls:sys_enter "${by_name[@]}" -p "$2" \
            >>"$LOG" 2>&1 &
        CNT_PID=$!
        # read-write opens of a fifo do not block (perf may not have started)
        exec {CNT_CTL}<>"$CNT_DIR/ctl" {CNT_ACK}<>"$CNT_DIR/ack"
        srv_count_ctl enable && return 0
        SRV_NOTE="perf stat did not start counting"
        srv_count_end
        return 1
    fi
    strace -f -c -o "$CNT_DIR/out" -p "$2" 2>"$CNT_DIR/err" &
    CNT_PID=$!
    # attached once it says so ("Process N attached [with M threads]":
    # with -f, -p attaches every thread of the process first)
    local i
    for ((i = 0; i < 200; i++)); do
        grep -q 'attached' "$CNT_DIR/err" 2>/dev/null && return 0
        kill -0 "$CNT_PID" 2>/dev/null || break
        sleep 0.05
    done
    SRV_NOTE="strace did not attach"
    srv_count_end
    return 1
}

# srv_count_ctl CMD: sends perf its command and waits for the ack.
srv_count_ctl() {
    local a=""
    echo "$1" >&"$CNT_CTL" && read -r -t 10 a <&"$CNT_ACK"
    [ "$a" = ack ]
}

srv_count_end() {
    if [ "$CNT_KIND" = perf ]; then
        kill -INT "$CNT_PID" 2>/dev/null
        exec {CNT_CTL}>&- {CNT_ACK}<&-
    else
        kill -INT "$CNT_PID" 2>/dev/null
    fi
    srv_reap "$CNT_PID" 10
    [ -f "$CNT_DIR/err" ] && cat "$CNT_DIR/err" >>"$LOG"
}

# srv_count_stop: stops counting; sets CNT_TOTAL (every syscall) and CNT_BY
# ("<count> <name>" lines, most first); 1 with SRV_NOTE when nothing came.
srv_count_stop() {
    [ "$CNT_KIND" = perf ] && srv_count_ctl disable
    srv_count_end
    CNT_TOTAL="" CNT_BY=""
    if [ "$CNT_KIND" = perf ]; then
        CNT_TOTAL=$(awk -F, '$3 == "raw_syscalls:sys_enter" { print $1 }' "$CNT_DIR/out" 2>/dev/null)
        CNT_BY=$(awk -F, '$3 ~ /^syscalls:sys_enter_/ && $1 + 0 > 0 {
                     sub(/^syscalls:sys_enter_/, "", $3); print $1, $3 }' \
                     "$CNT_DIR/out" 2>/dev/null | sort -rn)
    else
        # strace -c: "% time seconds usecs/call calls [errors] syscall"
        CNT_TOTAL=$(awk '$NF == "total" { print $4 }' "$CNT_DIR/out" 2>/dev/null)
        CNT_BY=$(awk '$1 ~ /^[0-9.]+$/ && $NF != "total" { print $4, $NF }' \
                     "$CNT_DIR/out" 2>/dev/null | sort -rn)
    fi
    rm -rf "$CNT_DIR"
    case "$CNT_TOTAL" in
    '' | *[!0-9]*) SRV_NOTE="no syscall count from $CNT_KIND"; return 1 ;;
    esac
}

# ------------------------------------------------------------------ nginx
# srv_nginx PORT (the last word of a server command): nginx-light in the
# foreground as ONE process (master_process off, worker_processes 1: the
# process measured is the one serving), answering every request like
# examples/http_hello: 200, "Content-Type: text/plain", "Content-Length: 5",
# body "hello". nginx adds what it always sends (Server: nginx without the
# version, Date, Connection: keep-alive); keepalive_requests is raised from
# its default of 1,000 so that wrk's connections stay open as they do with
# every other server; no access log.
srv_nginx() { srv_nginx_conf "$1" "" ""; }

# srv_nginx_tls PORT: the same nginx over TLS 1.3 only (issue 33's
# https_wrk and tls_handshakes rows of bench/run.sh): the certificate chain
# and key in TLS_CRT and TLS_KEY (PEM), OpenSSL's default TLS 1.3 cipher
# suites and groups (as fut's contexts: the client's preference picks,
# TLS_AES_256_GCM_SHA384 and X25519 with OpenSSL 3.0's clients), nginx's
# defaults otherwise (session tickets on, ssl_session_cache none: the
# clients of these rows never resume).
srv_nginx_tls() {
    srv_nginx_conf "$1" " ssl" "
        ssl_certificate $TLS_CRT;
        ssl_certificate_key $TLS_KEY;
        ssl_protocols TLSv1.3;"
}

# srv_nginx_conf PORT LISTEN_EXTRA SERVER_EXTRA: writes the config, runs it.
srv_nginx_conf() {
    local d
    d=$(mktemp -d "$SRV_TMP/nginx.XXXXXX")
    cat >"$d/nginx.conf" <<EOF
worker_processes 1;
master_process off;
daemon off;
pid $d/nginx.pid;
error_log stderr warn;
events { worker_connections 4096; }
http {
    access_log off;
    server_tokens off;
    keepalive_requests 1000000000;
    keepalive_timeout 75s;
    client_body_temp_path $d/body;
    proxy_temp_path $d/proxy;
    fastcgi_temp_path $d/fastcgi;
    uwsgi_temp_path $d/uwsgi;
    scgi_temp_path $d/scgi;
    server {
        listen 127.0.0.1:$1$2;$3
        location / {
            default_type text/plain;
            return 200 "hello";
        }
    }
}
EOF
    # SRV_NGINX_PREFIX: a command nginx runs under (callgrind_echo.sh)
    # shellcheck disable=SC2086 # a word list or nothing
    exec ${SRV_NGINX_PREFIX:-} nginx -p "$d" -c "$d/nginx.conf" -e stderr
}

# ------------------------------------------------------------------ redis
# srv_redis PORT: redis-server in the foreground on 127.0.0.1:PORT, no
# persistence (--save '', no AOF): hiredis_get's server (bench/run.sh's
# client rows), as bench/redis.sh runs it.
srv_redis() {
    exec redis-server --port "$1" --bind 127.0.0.1 --save '' --appendonly no
}

# ------------------------------------------------------------- PostgreSQL
# pg_select1's server (bench/run.sh's client rows): PostgreSQL 15 on a
# fresh cluster, as test/pq.c makes one. srv_pg_init makes it (initdb in a
# new directory PG_DIR, trust authentication, no fsync; as the 'postgres'
# user when run as root: initdb and postgres refuse root); srv_pg PORT
# runs its postmaster in the foreground (what pg_ctl start runs, kept in
# the foreground so that srv_start / srv_stop handle it like every other
# server: SIGTERM is its smart shutdown) on 127.0.0.1:PORT and a Unix
# socket in PG_DIR; srv_pg_fini removes PG_DIR once it stopped.
PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}
# the command that runs a program as the 'postgres' user (none: not root)
srv_pg_as() {
    [ "$(id -u)" = 0 ] && echo setpriv --reuid postgres --regid postgres --init-groups
}
srv_pg_init() {
    if [ ! -x "$PG_BIN/initdb" ] || [ ! -x "$PG_BIN/postgres" ]; then
        SRV_NOTE="no PostgreSQL 15 in $PG_BIN (Debian: postgresql)"
        return 1
    fi
    if [ "$(id -u)" = 0 ] && ! getent passwd postgres >/dev/null; then
        SRV_NOTE="no 'postgres' user to run the server as"
        return 1
    fi
    PG_DIR=$(mktemp -d "${TMPDIR:-/tmp}/fut-bench-pg.XXXXXX") || return 1
    [ "$(id -u)" = 0 ] && chown postgres: "$PG_DIR"
    # shellcheck disable=SC2046 # a word list or nothing
    if ! $(srv_pg_as) "$PG_BIN/initdb" -D "$PG_DIR/data" -A trust -U postgres \
        --no-sync -E UTF8 --locale=C >>"$LOG" 2>&1; then
        SRV_NOTE="initdb failed (see $LOG)"
        srv_pg_fini
        return 1
    fi
}
srv_pg() {
    # shellcheck disable=SC2046 # a word list or nothing
    exec $(srv_pg_as) "$PG_BIN/postgres" -D "$PG_DIR/data" -k "$PG_DIR" \
        -p "$1" -c listen_addresses=127.0.0.1 -F -c max_connections=50
}
srv_pg_fini() { [ -n "${PG_DIR:-}" ] && rm -rf "$PG_DIR"; PG_DIR=""; }
