#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""fut against the peers: RESULT lines -> ratio table, then details.

    summarize.py [--missing "name ..."] FILE...

Reads every line starting with "RESULT " (key=value fields, the format of
../shared/peers) from the files. For every (bench, peer, config) the value
is summarized over its runs by the median, min..max and the spread
(max - min) / median, as ../shared/peers/summarize.py does.

The ratio table has one row per check: a fut row (bench, config) against
its reference, median over median. The reference of a fut row is the Tokio
peer in the same config (current_thread, multi_thread_w2), except:
  xthread_wake        the C futex floor (c_baseline futex); Tokio's
                      2x_current_thread and the eventfd floor follow as
                      rows without a target
  servers             tcp_echo, tcp_echo_1k, http_wrk: three checks per
                      fut row, against the best of the reference peers
                      in the run (every config of each): the rate
                      (higher is better, so its target is a floor),
                      server CPU per op (server_cpu_us_per_op, the
                      lowest peer) and syscalls per op
                      (server_syscalls_per_op; its target is absolute,
                      the lowest peer is shown for scale). The
                      reference peers are those the target names
                      (bench/targets.txt), else Tokio and libuv (and
                      nginx for http_wrk). A target whose fut row was
                      not run shows the SKIP note run.sh wrote.
  TLS servers         https_wrk, tls_handshakes (issue 33): the same three
                      checks against nginx; tls_handshakes' configs end
                      in the key (_ecdsa, _rsa) and a row is compared with
                      nginx's of the same key only. 'versusrate' targets
                      put a fut row's rate over another fut row's (HTTPS
                      over fut's own HTTP, one worker).
  clients             curl_get, hiredis_get, pg_select1 (issue 32): the
                      value is the client's CPU per operation (lower is
                      better) against the reference program on the same
                      library (CLIENT_REFS: curl multi_poll, hiredis
                      libuv, pgbench prepared); a second row compares the
                      rates (transfers/s, commands/s, queries/s; higher
                      is better: its target, a 'clientrate' line of
                      targets.txt, is a floor)
plus the secondary checks the issues ask for (mpsc against Go's channels,
timers' peak RSS against libuv's, idle-task bytes minus the future's own
size). A fut row with 'versus' or 'absolute' targets (the fiber benchmarks,
which no peer has under their name) has those rows instead: its median
over another row's median (another fut benchmark, or Go's), or its median
itself against a bound. 'met' compares the ratio with the issue's target (bench/targets.txt);
'-' = no target.
'paired' is the median of the per-rep ratios (the i-th fut run over the
i-th reference run, from the same rep): a check on the ratio of medians
when the machine's load changes between reps.
--missing names benchmarks the peers have and fut does not (yet); they are
listed under the table.
"""
import os
import statistics
import sys
from collections import OrderedDict

ORDER = ["spawn_many", "yield_many", "ping_pong", "chained_spawn", "oneshot",
         "oneshot_local", "mpsc_1p1c", "mpsc_4p1c", "timers",
         "idle_task_pending", "idle_task_oneshot", "scope_join",
         "mutex_contended", "xthread_wake", "fiber_yield", "fiber_spawn",
         "idle_fiber", "tcp_echo", "tcp_echo_1k", "http_wrk", "https_wrk",
         "tls_handshakes", "curl_get", "hiredis_get", "pg_select1"]

RATE_UNITS = ("roundtrips/s", "req/s", "hs/s")
SERVER_BENCHES = ("tcp_echo", "tcp_echo_1k", "http_wrk", "https_wrk",
                  "tls_handshakes")
# The references of a server row without a target naming its own.
SERVER_PEERS = {"tcp_echo": ("tokio", "libuv"), "tcp_echo_1k": ("tokio", "libuv"),
                "http_wrk": ("tokio", "libuv", "nginx"),
                "https_wrk": ("nginx",), "tls_handshakes": ("nginx",)}
# Benchmarks whose configs end in the key (_ecdsa, _rsa): a row's
# reference is a peer's row of the same key.
KEYED = ("tls_handshakes",)


def same_key(bench, a, b):
    """Configs a and b are comparable (the same key, where it matters)."""
    return bench not in KEYED or a.rsplit("_", 1)[-1] == b.rsplit("_", 1)[-1]
# A server check: (kind, field of the RESULT line, unit shown, lower is
# better). 'syscalls' targets are absolute.
SERVER_CHECKS = (("rate", "value", None, False),
                 ("cpu", "server_cpu_us_per_op", "server CPU us/op", True),
                 ("syscalls", "server_syscalls_per_op", "syscalls/op", True))

CT, MT2 = "current_thread", "multi_thread_w2"

# The client benchmarks (issue 32): the reference (peer, config) of fut's
# rows, and the rate field each line carries (bench/client.h).
CLIENT_REFS = {"curl_get": ("curl", "multi_poll"),
               "hiredis_get": ("hiredis", "libuv"),
               "pg_select1": ("pgbench", "prepared")}
CLIENT_RATE = {"curl_get": ("transfers_per_s", "transfers/s"),
               "hiredis_get": ("commands_per_s", "commands/s"),
               "pg_select1": ("queries_per_s", "queries/s")}


def load_targets(path):
    """bench/targets.txt: the issues' targets (its header says the format).
    Returns (ratio targets by (bench, fut config), server targets by (kind,
    bench, fut config) as (bound, reference peers or None), the idle-task
    overhead bound, 'versus' targets by (bench, fut config), 'absolute'
    bounds by (bench, fut config), client rate floors by (bench, fut
    config))."""
    ratios, servers, idle, crates = {}, {}, None, {}
    versus, absolute = OrderedDict(), {}
    global VERSUSRATE_TARGETS
    with open(path) as f:
        for n, line in enumerate(f, 1):
            w = line.split("#", 1)[0].split()
            if not w:
                continue
            if w[0] == "ratio" and len(w) == 4:
                ratios[(w[1], w[2])] = float(w[3])
            elif w[0] in ("rate", "cpu") and len(w) == 5:
                servers[(w[0], w[1], w[2])] = (float(w[3]),
                                               tuple(w[4].split(",")))
            elif w[0] == "syscalls" and len(w) == 4:
                servers[(w[0], w[1], w[2])] = (float(w[3]), None)
            elif w[0] == "idle_overhead" and len(w) == 2:
                idle = float(w[1])
            elif w[0] == "versus" and len(w) == 7:
                versus.setdefault((w[1], w[2]), []).append(
                    ((w[4], w[3], w[5]), float(w[6])))
            elif w[0] == "absolute" and len(w) == 4:
                absolute[(w[1], w[2])] = float(w[3])
            elif w[0] == "clientrate" and len(w) == 4:
                crates[(w[1], w[2])] = float(w[3])
            elif w[0] == "versusrate" and len(w) == 7:
                VERSUSRATE_TARGETS.setdefault((w[1], w[2]), []).append(
                    ((w[4], w[3], w[5]), float(w[6])))
            else:
                sys.exit(f"{path}:{n}: cannot read '{line.strip()}'")
    return ratios, servers, idle, versus, absolute, crates


VERSUSRATE_TARGETS = OrderedDict()  # (bench, config) -> [((b, peer, c), min)]
(RATIO_TARGETS, SERVER_TARGETS, IDLE_OVERHEAD_MAX, VERSUS_TARGETS,
 ABSOLUTE_TARGETS, CLIENT_RATE_TARGETS) = load_targets(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "targets.txt"))

GO_CONFIG = {CT: "gomaxprocs1", MT2: "gomaxprocs2"}

# Secondary fields shown in the details, per benchmark.
EXTRA = {
    "timers": ["wall_ms", "arm_ms", "cpu_ns_per_op", "maxrss_kb",
               "cancel_missed", "mean_late_us"],
    "idle_task_pending": ["spawn_ns_per_task", "maxrss_kb", "future_bytes"],
    "idle_task_oneshot": ["spawn_ns_per_task", "maxrss_kb", "future_bytes"],
    "idle_fiber": ["spawn_ns_per_fiber", "maxrss_kb", "stack_bytes",
                   "heap_bytes"],
}
SERVER_EXTRA = ["p50_us", "p99_us", "server_cpu_us_per_op",
                "server_user_us_per_op", "server_syscalls_per_op"]
for _b in SERVER_BENCHES:
    EXTRA[_b] = SERVER_EXTRA
EXTRA["https_wrk"] = SERVER_EXTRA + ["load1"]
EXTRA["tls_handshakes"] = ["server_cpu_us_per_op", "server_user_us_per_op",
                           "server_syscalls_per_op", "client_cpu_ms", "load1"]
for _b, (_f, _) in CLIENT_RATE.items():
    EXTRA[_b] = [_f, "user_ms", "sys_ms", "wall_ms", "load1", "maxrss_kb"] + \
        (["new_conns"] if _b == "curl_get" else [])
DEFAULT_EXTRA = ["cpu_ns_per_op", "maxrss_kb"]


def parse(paths):
    """{(bench, peer, config): [fields, ...]} in first-seen order; the SKIP
    lines (a row not measured: 'note=' and the rest of the line say why)
    go to SKIPS."""
    rows = OrderedDict()
    for path in paths:
        with open(path) as fp:
            for line in fp:
                if line.startswith("SKIP "):
                    head, _, note = line.rstrip("\n").partition(" note=")
                    kv = dict(t.split("=", 1) for t in head.split()[1:]
                              if "=" in t)
                    if {"bench", "peer", "config"} <= kv.keys():
                        SKIPS.setdefault((kv["bench"], kv["peer"],
                                          kv["config"]), []).append(note)
                    continue
                if not line.startswith("RESULT "):
                    continue
                kv = {}
                for tok in line.split()[1:]:
                    if "=" in tok:
                        k, v = tok.split("=", 1)
                        kv[k] = v
                if {"bench", "peer", "config", "value"} <= kv.keys():
                    rows.setdefault((kv["bench"], kv["peer"], kv["config"]),
                                    []).append(kv)
    return rows


SKIPS = OrderedDict()  # (bench, peer, config) -> [note, ...]


def num(runs, field):
    return [float(r[field]) for r in runs if field in r]


def median(runs, field="value"):
    vals = num(runs, field)
    return statistics.median(vals) if vals else None


def spread(runs, field="value"):
    vals = num(runs, field)
    m = statistics.median(vals)
    return (max(vals) - min(vals)) / m * 100 if m else 0.0


# Fields shown with two decimals (per-op figures near 1, and targets on them).
TWO_DECIMALS = ("server_cpu_us_per_op", "server_user_us_per_op",
                "server_syscalls_per_op")


def fmt(x, field=None):
    if x is None:
        return "-"
    if field in TWO_DECIMALS:
        return f"{x:.2f}"
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    if abs(x) >= 100:
        return f"{x:.0f}"
    return f"{x:.1f}"


def cell(runs, field="value"):
    if not num(runs, field):
        return "-"
    return f"{fmt(median(runs, field), field)} [{spread(runs, field):.0f}%]"


def bench_key(b):
    return ORDER.index(b) if b in ORDER else len(ORDER)


def reference(rows, bench, config):
    """(label, runs, value) of the reference of fut's (bench, config)."""
    if bench == "xthread_wake":
        k = (bench, "c_baseline", "futex")
        return ("c_baseline futex", rows.get(k))
    if bench in SERVER_BENCHES:
        return best_peer(rows, bench, SERVER_PEERS[bench], "value", False,
                         config)
    if bench in CLIENT_REFS:
        peer, cfg = CLIENT_REFS[bench]
        return (f"{peer} {cfg}", rows.get((bench, peer, cfg)))
    return (f"tokio {config}", rows.get((bench, "tokio", config)))


def best_peer(rows, bench, peers, field, lower, config=None):
    """(label, runs) of the best of every config of 'peers' on 'field'
    (by median; the lowest when 'lower'); of 'config''s key only, for the
    KEYED benchmarks."""
    best = None
    for (b, peer, cfg), runs in rows.items():
        if b != bench or peer not in peers or median(runs, field) is None:
            continue
        if config is not None and not same_key(bench, config, cfg):
            continue
        m = median(runs, field)
        if best is None or (m < best[0] if lower else m > best[0]):
            best = (m, f"{'lowest' if lower else 'best'}: {peer} {cfg}", runs)
    if best is None:
        return (" / ".join(peers), None)
    return best[1:]


def server_checks(rows, bench, config, runs):
    """The three checks of fut's server row (bench, config); 'runs' = None
    when it was not run (a target's row then says why)."""
    out = []
    for kind, field, unit, lower in SERVER_CHECKS:
        bound, peers = SERVER_TARGETS.get((kind, bench, config), (None, None))
        if bound is None and (runs is None or not num(runs, field)):
            continue  # nothing to check, nothing measured
        peers = peers or SERVER_PEERS[bench]
        label, ref = best_peer(rows, bench, peers, field, lower, config)
        if unit is None:
            unit = (runs or ref or [{}])[0].get("unit", "rate")
        if runs is None or not num(runs, field):
            notes = SKIPS.get((bench, "fut", config))
            why = f"(skipped: {notes[-1]})" if notes else "(no run)"
            if runs is not None:
                why = f"(no {field})"
            out.append([bench, config, unit, why, label,
                        cell(ref, field) if ref else "(no run)", "-", "-",
                        fmt_target(bound, not lower) if kind != "syscalls"
                        else fmt_abs(bound), "-"])
            continue
        if kind == "syscalls":
            out.append(absolute_row(bench, config, unit, runs, field, label,
                                    ref, bound))
        else:
            out.append(check_row(bench, config, unit, cell(runs, field),
                                 median(runs, field), label, ref, bound,
                                 not lower, field=field, fut_runs=runs))
    for (rb, peer, rc), mn in VERSUSRATE_TARGETS.get((bench, config), []):
        ref = rows.get((rb, peer, rc))
        out.append(check_row(bench, config, (runs or ref or [{}])[0].get(
            "unit", "rate"), cell(runs) if runs else "(no run)",
            median(runs) if runs else None, f"{peer} {rb} {rc}", ref, mn,
            True, fut_runs=runs))
    return out


def fmt_abs(bound):
    return "-" if bound is None else f"<= {bound:.2f} (absolute)"


def absolute_row(bench, config, unit, runs, field, label, ref, bound):
    """A check of fut's own figure (its reference shown for scale)."""
    fm = median(runs, field)
    rm = median(ref, field) if ref else None
    met = "-" if bound is None else ("yes" if fm <= bound else "no")
    return [bench, config, unit, cell(runs, field), label,
            cell(ref, field) if ref else "(no run)",
            f"{fm / rm:.2f}" if rm else "-", "-", fmt_abs(bound), met]


def ratio_rows(rows):
    """The checks, as lists of table cells."""
    out = []
    fut_keys = sorted((k for k in rows if k[1] == "fut"),
                      key=lambda k: (bench_key(k[0]), k[0], k[2]))
    for bench, _, config in fut_keys:
        runs = rows[(bench, "fut", config)]
        if bench in SERVER_BENCHES:
            out.extend(server_checks(rows, bench, config, runs))
            continue
        unit = runs[0].get("unit", "")
        fm = median(runs)
        if (bench, config) in VERSUS_TARGETS or \
                (bench, config) in ABSOLUTE_TARGETS:
            out += own_target_rows(rows, bench, config, unit, runs)
            continue
        label, ref = reference(rows, bench, config)
        rate = unit in RATE_UNITS
        target = RATIO_TARGETS.get((bench, config))
        out.append(check_row(bench, config, unit, cell(runs), fm, label,
                             ref, target, rate, fut_runs=runs))
        if bench in CLIENT_RATE:
            field, shown = CLIENT_RATE[bench]
            out.append(check_row(bench, config, shown, cell(runs, field),
                                 median(runs, field), label, ref,
                                 CLIENT_RATE_TARGETS.get((bench, config)),
                                 True, field=field, fut_runs=runs))
        if bench.startswith("mpsc_") and config in GO_CONFIG:
            go = rows.get((bench, "go", GO_CONFIG[config]))
            out.append(check_row(bench, config, unit, cell(runs), fm,
                                 f"go {GO_CONFIG[config]}", go, 1.0, False,
                                 fut_runs=runs))
        if bench == "xthread_wake":
            # For comparison (no target): Tokio's two current_thread
            # runtimes on two threads, and the eventfd floor its wakes
            # (epoll) correspond to.
            for peer, cfg in (("tokio", "2x_current_thread_notify"),
                              ("c_baseline", "eventfd_epoll")):
                out.append(check_row(bench, config, unit, cell(runs), fm,
                                     f"{peer} {cfg}",
                                     rows.get((bench, peer, cfg)), None,
                                     False, fut_runs=runs))
        if bench == "timers":
            uv = rows.get((bench, "libuv", "default_loop"))
            fr = median(runs, "maxrss_kb")
            out.append(check_row(bench, config, "maxrss_kb", fmt(fr), fr,
                                 "libuv default_loop", uv,
                                 1.0 if config == CT else None, False,
                                 field="maxrss_kb"))
        if bench == "idle_task_pending" and median(runs, "future_bytes"):
            fb = median(runs, "future_bytes")
            over = fm - fb
            # Issue 2's target is for the current-thread runtime.
            target, met = "-", "-"
            if config == CT:
                target = f"<= {IDLE_OVERHEAD_MAX:.0f} B"
                met = "yes" if over <= IDLE_OVERHEAD_MAX else "no"
            out.append([bench, config, f"bytes/task - future ({fmt(fb)} B)",
                        fmt(over), "absolute", "", "", "", target, met])
    # Targets of server rows fut did not run (a SKIP line, or none at all).
    ran = {k[0] for k in rows} | {k[0] for k in SKIPS}
    unrun = OrderedDict.fromkeys(
        (bench, config) for _, bench, config in SERVER_TARGETS
        if bench in ran and (bench, "fut", config) not in rows)
    for bench, config in sorted(unrun, key=lambda k: bench_key(k[0])):
        out.extend(server_checks(rows, bench, config, None))
    return out


def own_target_rows(rows, bench, config, unit, runs):
    """The 'versus' rows of fut's (bench, config), then its 'absolute'
    row (targets.txt)."""
    out = []
    for (rb, peer, rc), mx in VERSUS_TARGETS.get((bench, config), []):
        out.append(check_row(bench, config, unit, cell(runs), median(runs),
                             f"{peer} {rb} {rc}", rows.get((rb, peer, rc)),
                             mx, False, fut_runs=runs))
    mx = ABSOLUTE_TARGETS.get((bench, config))
    if mx is not None:
        fm = median(runs)
        out.append([bench, config, unit, cell(runs), "absolute", "", "", "",
                    fmt_target(mx, False), "yes" if fm <= mx else "no"])
    return out


def paired(fut_runs, ref, field="value"):
    """Median of the per-rep ratios fut_i / ref_i: run.sh runs rep-major,
    so the i-th run of each row comes from the same rep, minutes apart at
    most; on a noisy machine this cancels load that moves between reps.
    None unless both have the same number (>= 2) of runs."""
    a, b = num(fut_runs or [], field), num(ref or [], field)
    if len(a) < 2 or len(a) != len(b) or not all(b):
        return None
    return statistics.median(x / y for x, y in zip(a, b))


def check_row(bench, config, unit, fut_cell, fut_med, label, ref, target,
              rate, field="value", fut_runs=None):
    if not ref:
        return [bench, config, unit, fut_cell, label, "(no run)", "-", "-",
                fmt_target(target, rate), "-"]
    rm = median(ref, field)
    ref_cell = cell(ref, field) if field != "maxrss_kb" else fmt(rm)
    ratio = fut_med / rm if rm and fut_med is not None else None
    met = "-"
    if target is not None and ratio is not None:
        met = "yes" if (ratio >= target if rate else ratio <= target) else "no"
    pr = paired(fut_runs, ref, field) if field != "maxrss_kb" else None
    return [bench, config, unit, fut_cell, label, ref_cell,
            f"{ratio:.2f}" if ratio is not None else "-",
            f"{pr:.2f}" if pr is not None else "-",
            fmt_target(target, rate), met]


def fmt_target(target, rate):
    if target is None:
        return "-"
    return f"{'>=' if rate else '<='} {target:.2f}"


def print_table(header, body):
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for r in body:
        print("| " + " | ".join(r) + " |")


def details(rows):
    benches = sorted({k[0] for k in rows}, key=lambda b: (bench_key(b), b))
    for b in benches:
        keys = [k for k in rows if k[0] == b]
        unit = rows[keys[0]][0].get("unit", "")
        extra = EXTRA.get(b, DEFAULT_EXTRA)
        print(f"\n### {b} ({unit}; rel = vs the reference of the row's "
              f"config, as in the ratio table)\n")
        body = []
        for k in sorted(keys, key=lambda k: (k[1] != "fut", k[1], k[2])):
            runs = rows[k]
            vals = num(runs, "value")
            m = median(runs)
            cfg = k[2] if k[2] in (CT, MT2) or b in KEYED else CT
            _, ref = reference(rows, b, cfg)
            rm = median(ref) if ref else None
            rel = f"{m / rm:.2f}" if rm else "-"
            body.append([k[1], k[2], str(len(vals)), fmt(m),
                         f"{fmt(min(vals))}..{fmt(max(vals))}",
                         f"{spread(runs):.0f}%", rel] +
                        [fmt(median(runs, f), f) for f in extra])
            if b in SERVER_BENCHES:
                top = [r["server_syscalls_top"] for r in runs
                       if "server_syscalls_top" in r]
                body[-1].append(top[-1].replace(",", ", ") if top else "-")
        print_table(["peer", "config", "n", "median", "min..max", "spread",
                     "rel"] + extra +
                    (["syscalls/op by name (last run)"]
                     if b in SERVER_BENCHES else []), body)


def main():
    args = sys.argv[1:]
    missing = ""
    if len(args) >= 2 and args[0] == "--missing":
        missing, args = args[1], args[2:]
    rows = parse(args)
    print("## fut / reference (medians; [spread] = (max - min) / median)\n")
    print_table(["bench", "config", "unit", "fut", "reference", "ref",
                 "fut / ref", "paired", "target", "met"], ratio_rows(rows))
    if missing.split():
        print(f"\nNot in fut yet (no row): {', '.join(missing.split())}")
    if SKIPS:
        print("\nSkipped rows (the server did not start or its load "
              "failed; run.sh's note, times skipped):\n")
        for (b, peer, cfg), notes in SKIPS.items():
            print(f"- {b} {peer} {cfg}: {notes[-1]} (x{len(notes)})")
    details(rows)


if __name__ == "__main__":
    main()
