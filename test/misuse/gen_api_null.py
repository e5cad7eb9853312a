#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Generates test_api_null's table of cases from the public headers.

Every FUT_EXTERN function of libfut's headers (the include/fut/*.h that
include/fut.h includes), called once per pointer
argument with NULL there (the other pointers at zeroed blocks, the other
values small and valid), unless api_null.txt says NULL means something for
that argument. A function the headers gain is tested without anyone
remembering to: an entry of api_null.txt that names no function or
argument fails the generation, so the list cannot rot either.

    gen_api_null.py INCLUDE_DIR api_null.txt OUT.c [notls]

'notls': a build without libfut-tls leaves fut/tls.h out (its functions
are not linked); with it, the cases include and call them too.
"""
import glob
import os
import re
import sys


def libfut_headers(incdir, tls):
    """The headers the test links against: those include/fut.h includes
    (an adapter's header, fut/hiredis.h or fut/curl.h, belongs to a
    library of its own), and fut/tls.h when libfut-tls is built (the test
    links it then)."""
    umbrella = open(os.path.join(incdir, "fut.h")).read()
    names = set(re.findall(r'#\s*include\s+"fut/(\w+\.h)"', umbrella))
    if tls:
        names.add("tls.h")
    return [p for p in sorted(glob.glob(os.path.join(incdir, "fut", "*.h")))
            if os.path.basename(p) in names]


def prototypes(incdir, tls):
    out = []
    for path in libfut_headers(incdir, tls):
        src = open(path).read()
        src = re.sub(r"/\*.*?\*/", " ", src, flags=re.S)
        for d in re.findall(r"FUT_EXTERN\s+([^;{#]*?\))\s*"
                            r"(?:__attribute__\s*\(\([^;]*\)\))?\s*;", src,
                            re.S):
            d = re.sub(r"\s+", " ", d).strip()
            m = re.match(r"(.*?)\b(\w+)\s*\((.*)\)$", d)
            ret, name, args = m.group(1).strip(), m.group(2), m.group(3)
            params = [] if args.strip() in ("", "void") else split_args(args)
            out.append((os.path.basename(path), ret, name, params))
    return out


def split_args(args):
    parts, depth, cur = [], 0, ""
    for ch in args:
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
            continue
        depth += ch == "("
        depth -= ch == ")"
        cur += ch
    parts.append(cur.strip())
    params = []
    for p in parts:
        fm = re.match(r"(.*)\(\s*\*\s*(\w+)\s*\)\s*\((.*)\)$", p)
        if fm:  # a function pointer written out: its type without the name
            typ = re.sub(r"\(\s*\*\s*\w+\s*\)", "(*)", p, count=1)
            params.append(("fnptr", fm.group(2), typ))
            continue
        m = re.match(r"(.*?)(\w+)$", p)
        typ, pname = m.group(1).strip(), m.group(2)
        if typ.endswith("_fn") or re.search(r"\b\w+_fn$", typ):
            params.append(("fnptr", pname, typ))
        elif "*" in typ:
            params.append(("ptr", pname, typ))
        else:
            params.append(("val", pname, typ))
    return params


def load_table(path):
    nullable, noerror, skip = set(), set(), set()
    for line in open(path):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        w = line.split()
        if w[0] == "nullable":
            nullable.add((w[1], w[2]))
        elif w[0] == "noerror":
            noerror.add(w[1])
        elif w[0] == "skip":
            skip.add(w[1])
        else:
            sys.exit(f"{path}: unknown kind {w[0]!r}")
    return nullable, noerror, skip


def value_for(typ, pname):
    if typ in ("int", "long", "size_t", "uintptr_t", "uint64_t", "unsigned"):
        return "1"
    if typ in ("int64_t", "intptr_t"):
        return "1"
    if typ == "socklen_t":
        return "(socklen_t)sizeof(struct sockaddr_in)"
    return "1"


def main():
    incdir, table, out = sys.argv[1:4]
    tls = sys.argv[4:5] != ["notls"]
    nullable, noerror, skip = load_table(table)
    protos = prototypes(incdir, tls)
    names = {p[2]: p for p in protos}
    for fn, arg in nullable:
        if not tls and fn.startswith("fut_tls_"):
            continue
        if fn not in names or arg not in [q[1] for q in names[fn][3]]:
            sys.exit(f"{table}: 'nullable {fn} {arg}': no such function "
                     "or argument in the headers")
    for fn in noerror | skip:
        if not tls and fn.startswith("fut_tls_"):
            continue
        if fn not in names:
            sys.exit(f"{table}: {fn}: no such function in the headers")
    cases = []
    for hdr, ret, name, params in protos:
        if name in skip:
            continue
        for i, (kind, pname, typ) in enumerate(params):
            if kind not in ("ptr", "fnptr") or (name, pname) in nullable:
                continue
            args = []
            for j, (k2, n2, t2) in enumerate(params):
                if j == i:
                    args.append("NULL")
                elif k2 == "ptr":
                    if "char" in t2 and "*" in t2 and "**" not in t2:
                        args.append(f'({t2})"/nonexistent/fut-misuse"')
                    else:
                        args.append(f"({t2})(void *)blank[{j}]")
                elif k2 == "fnptr":
                    args.append(f"({t2})stub_fn")
                else:
                    args.append(value_for(t2, n2))
            if ret == "void":
                cls = "VOID"
            elif name in noerror:
                cls = "NOERR"
            elif ret in ("int", "long", "int64_t", "ssize_t"):
                cls = "ERR"
            else:
                cls = "VALUE"  # pointers, structs: must not crash
            cases.append((name, pname, cls, ret, ", ".join(args)))
    with open(out, "w") as f:
        f.write("/* Generated by test/misuse/gen_api_null.py from "
                "the headers in include/fut/: do not edit. */\n")
        f.write('#include "api_null.h"\n')
        if tls:
            f.write('#include "fut/tls.h"\n')
        f.write("\n")
        for k, (name, pname, cls, ret, args) in enumerate(cases):
            f.write(f"static long case_{k}(void)\n{{\n")
            if ret == "void":
                f.write(f"    {name}({args});\n    return 0;\n}}\n")
            elif cls == "VALUE":
                f.write(f"    {ret} r_ = {name}({args});\n"
                        "    (void)r_;\n    return 0;\n}\n")
            else:
                f.write(f"    return (long){name}({args});\n}}\n")
        f.write("\nconst struct api_case api_cases[] = {\n")
        for k, (name, pname, cls, ret, args) in enumerate(cases):
            f.write(f'    {{"{name}", "{pname}", API_{cls}, case_{k}}},\n')
        f.write("};\nconst int api_ncases = "
                f"{len(cases)};\n")


main()
