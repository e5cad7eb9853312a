#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Checks that src/ is a house without circles and that every dependency
# points down the layer order of docs/architecture.md (its "layers" block).
#
#   scripts/check-layers.sh [OBJECT.o ...]
#
# With no objects it configures and builds the library's objects in
# build-layers/ first. The CTest test 'check_layers' passes the objects of
# the build it belongs to.
#
# What counts as a dependency of a file:
#   call     A.c references a non-static function (or variable) that B.c
#            defines: nm on the objects (U in A's, defined in B's);
#   include  A includes "B.h" (src/ and include/, resolved as the
#            compiler does with -Isrc -Iinclude);
#   inline   header H's inline functions call a function B.c defines
#            (parsed: the bodies of 'static inline' / FUT__HOT_INLINE
#            functions, comments and strings removed); whoever includes
#            H depends on B.c through H's fast path.
# It fails on
#   - a circle: two .c files that reach each other through these edges
#     (a strongly connected component of the graph holding more than one
#     .c file), printed with one path each way;
#   - a climb: an edge from a file to a file in a higher layer;
#   - a file under src/ or include/ that no layer claims.
# Findings listed in scripts/layers-known.txt (one per line, as printed,
# with the reason and who removes it in a '#' comment above) are printed
# as known and do not fail; a listed finding that no longer occurs fails
# (remove its line).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)

objs=("$@")
if [ ${#objs[@]} -eq 0 ]; then
    cmake -S "$ROOT" -B "$ROOT/build-layers" -DFUT_BUILD_TESTS=OFF \
        -DFUT_BUILD_EXAMPLES=OFF -DFUT_BUILD_BENCH=OFF -DFUT_BUILD_MC=OFF \
        >/dev/null
    cmake --build "$ROOT/build-layers" --target fut_obj >/dev/null
    mapfile -t objs < <(find "$ROOT/build-layers/CMakeFiles/fut_obj.dir" \
        -name '*.c.o' | sort)
fi

exec python3 - "$ROOT" "${objs[@]}" <<'PY'
import os, re, subprocess, sys
from collections import defaultdict

root, objs = sys.argv[1], sys.argv[2:]

# ---------------------------------------------------------------- layers
doc = open(os.path.join(root, "docs/architecture.md")).read()
m = re.search(r"<!-- layers begin -->(.*?)<!-- layers end -->", doc, re.S)
if not m:
    sys.exit("check-layers: no layers block in docs/architecture.md")
layers = []  # (rank, name, [prefixes]), lowest first
for line in m.group(1).splitlines():
    lm = re.match(r"\s*(\d+)\s+(\S+)\s*:\s*(.*)$", line)
    if lm:
        layers.append((int(lm.group(1)), lm.group(2), lm.group(3).split()))

def layer_of(path):
    best = None
    for rank, name, prefixes in layers:
        for p in prefixes:
            if path == p or (p.endswith("/") and path.startswith(p)):
                if best is None or len(p) > best[2]:
                    best = (rank, name, len(p))
    return best

# ------------------------------------------------------- calls (nm)
def src_of(obj):
    o = obj.replace(os.sep, "/")
    i = o.find(".dir/")
    s = os.path.normpath(o[i + 5:] if i >= 0 else o)
    return s[:-2] if s.endswith(".o") else s

defs, undef = {}, defaultdict(set)
for obj in objs:
    src = src_of(obj)
    out = subprocess.run(["nm", "-P", obj], capture_output=True, text=True,
                         check=True).stdout
    for line in out.splitlines():
        f = line.split()
        if len(f) < 2:
            continue
        if f[1] == "U":
            undef[src].add(f[0])
        elif f[1] in "TDBRGSVW":
            defs[f[0]] = src

edges = defaultdict(dict)  # a -> {b: (kind, detail)}
def edge(a, b, kind, detail):
    if a != b and b not in edges[a]:
        edges[a][b] = (kind, detail)

for src, names in undef.items():
    for n in sorted(names):
        if n in defs:
            edge(src, defs[n], "call", n)

# ------------------------------------------- includes and inline bodies
def strip(text):
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"),
                  text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    return re.sub(r'"(\\.|[^"\\\n])*"', '""', text)

files = []
for top in ("src", "include"):
    for d, _, fs in os.walk(os.path.join(root, top)):
        for f in fs:
            if f.endswith((".c", ".h")):
                files.append(os.path.relpath(os.path.join(d, f), root))
files.sort()

def resolve(inc, frm):
    for base in (os.path.dirname(frm), "src", "include"):
        p = os.path.normpath(os.path.join(base, inc))
        if os.path.exists(os.path.join(root, p)):
            return p
    return None

inline_re = re.compile(r"(?:static\s+inline|FUT__HOT_INLINE)\b[^;{]*?"
                       r"\b\w+\s*\([^;{]*\)\s*\{")
for f in files:
    text = open(os.path.join(root, f)).read()
    for inc in re.findall(r'^\s*#\s*include\s+"([^"]+)"', text, re.M):
        p = resolve(inc, f)
        if p:
            edge(f, p, "include", inc)
    if not f.endswith(".h"):
        continue
    code = strip(text)
    for im in inline_re.finditer(code):
        depth, i = 1, im.end()
        while depth and i < len(code):
            depth += {"{": 1, "}": -1}.get(code[i], 0)
            i += 1
        for n in re.findall(r"\b([A-Za-z_]\w*)\s*\(", code[im.end():i]):
            if n in defs:
                edge(f, defs[n], "inline", n)

# ------------------------------------------------------------- findings
findings = []
for f in files:
    if layer_of(f) is None:
        findings.append(f"unlayered: {f}")
for a in sorted(edges):
    la = layer_of(a)
    for b, (kind, detail) in sorted(edges[a].items()):
        lb = layer_of(b)
        if la and lb and lb[0] > la[0]:
            findings.append(f"climb: {a} ({la[1]}) -> {b} ({lb[1]}) "
                            f"[{kind} {detail}]")

# Tarjan's strongly connected components.
index, low, stack, on, comps, counter = {}, {}, [], set(), [], [0]
sys.setrecursionlimit(10000)
def visit(v):
    index[v] = low[v] = counter[0]; counter[0] += 1
    stack.append(v); on.add(v)
    for w in edges.get(v, {}):
        if w not in index:
            visit(w); low[v] = min(low[v], low[w])
        elif w in on:
            low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        comp = []
        while True:
            w = stack.pop(); on.discard(w); comp.append(w)
            if w == v:
                break
        comps.append(comp)
nodes = set(edges) | {b for a in edges for b in edges[a]}
for v in sorted(nodes):
    if v not in index:
        visit(v)

def path(a, b, inside):
    prev, todo = {a: None}, [a]
    while todo:
        v = todo.pop(0)
        if v == b:
            break
        for w in sorted(edges.get(v, {})):
            if w in inside and w not in prev:
                prev[w] = v; todo.append(w)
    hops, v = [], b
    while prev.get(v):
        kind, detail = edges[prev[v]][v]
        hops.append(f"{prev[v]} -{kind} {detail}-> {v}")
        v = prev[v]
    return "; ".join(reversed(hops))

for comp in comps:
    cs = sorted(c for c in comp if c.endswith(".c"))
    if len(cs) < 2:
        continue
    inside = set(comp)
    findings.append(f"circle: {' <-> '.join(cs)}")
    print(f"  circle {cs[0]} <-> {cs[1]}:\n    {path(cs[0], cs[1], inside)}"
          f"\n    {path(cs[1], cs[0], inside)}")

# ---------------------------------------------------------- the verdict
known_path = os.path.join(root, "scripts/layers-known.txt")
known = set()
if os.path.exists(known_path):
    for line in open(known_path):
        line = line.strip()
        if line and not line.startswith("#"):
            known.add(line)
bad = [f for f in findings if f not in known]
stale = sorted(known - set(findings))
for f in findings:
    print(("known  " if f in known else "FAIL   ") + f)
for f in stale:
    print("STALE  " + f + "   (gone: remove it from scripts/layers-known.txt)")
ncalls = sum(1 for a in edges for b in edges[a] if edges[a][b][0] == "call")
print(f"check-layers: {len(objs)} objects, {len(files)} files, "
      f"{ncalls} call edges between files; {len(bad)} failing, "
      f"{len(findings) - len(bad)} known, {len(stale)} stale")
sys.exit(1 if bad or stale else 0)
PY
