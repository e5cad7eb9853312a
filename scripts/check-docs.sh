#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# scripts/check-docs.sh: the docs name only things that exist. Every file
# path, every fut_ / fut__ / FUT_ name, every `backticked` C identifier
# and every `test.name` quoted by the prose of the tree must be found in
# the tree; each stale reference is printed as 'file:line: name' and the
# exit status is 1 (0 when there is none).
#
#   scripts/check-docs.sh            (from anywhere; it works on its tree)
#
# The CTest test 'check_docs' (test/docs.cmake, plain build only) runs it.
#
# What is read (the prose):
#   - every *.md file of the tree - README.md, docs/*.md, bench/README.md,
#     bench/RESULTS.md, apps/*/README.md, test/mc/README.md, ... - found by
#     walking the tree, skipping hidden directories, build*/ directories
#     and bench/history/ (dated records of past runs: what they name was
#     true on their date);
#   - the opening comment block of each examples/*.c (from its first line
#     to the first '*/').
# Fenced code blocks are read like the rest (the README's layout block is
# a list of paths). URLs (anything after '://') are skipped.
#
# What is checked there, and where it must be found:
#   names  a word starting 'fut_', 'fut__' or 'FUT_' (not preceded by a
#          letter, digit, '_', '/' or '.'). A trailing '()', '(...)' or
#          '=value' is not part of the name. A '*' in it is a wildcard
#          ('fut_mpsc_*', 'fut_spawn*', 'fut_*_is_closed', 'FUT_E*'): some
#          name of the code must match. A name followed by '<' is a
#          pattern ('fut_<object>_<verb>') and is skipped, as are the bare
#          prefixes. It must occur as a whole word in a file under
#          include/ src/ examples/ apps/ test/ bench/ scripts/ cmake/ or in
#          a CMakeLists.txt (a definition, a declaration or a use: this is
#          a grep, not a parser).
#   paths  a token made of [A-Za-z0-9_.+*/[]-] that either starts with a
#          directory of the tree's top level followed by '/' (src/,
#          include/, test/, docs/, bench/, examples/, apps/, scripts/,
#          cmake/, .ci/, build/ excepted) or ends in a file extension of
#          the list EXT below. Trailing '.', ',', ':', ')', ';' are
#          dropped. It
#          must exist relative to the repository's root, to the directory
#          of the file that quotes it, or to include/ ('fut/net.h'); a
#          name without '/' ('tslab.h', 'multi.h') may also be the base
#          name of any file of the tree. '*' and '[ch]' are globs
#          ('src/platform/sys.[ch]'). Paths starting
#          '../shared/' (the project's shared folder, outside the
#          repository) are checked against the repository's parent's
#          shared/ when that exists, else skipped; other absolute paths,
#          'build/...' (a build tree) and '~/' are skipped. A token
#          followed by '<' is a pattern ('test/sync_<kind>.c') and skipped.
#          A path without an extension is also found when X.c exists (a
#          program: 'bench/bench_scope'), a file X when X.in exists (made
#          by the build: 'fut.pc').
#   code   inside `backticks`, a lower-case C identifier with a '_' in it
#          ('op_read', 'park_worker()'), not a fut_ name (above), not part
#          of a path, of 'a::b' or of a Rust macro 'a!': it must occur as
#          a whole word in the code files (as names do), or be the tail of
#          a public fut_ name (the short form 'try_lock' of
#          fut_mutex_try_lock; not of an internal fut__ one). This keeps
#          the walks through static functions honest.
#   tests  a whole `backticked` AREA.CASE[.SUFFIX...] or valgrind.AREA.CASE
#          where AREA is an area registered by fut_check_test or
#          fut_example_test in test/*.cmake ('io_reactor.forced',
#          'net_tcp.backoff.mt'; not a file name 'scope.c'): CASE must be
#          a word of the .cmake file that registers AREA (its case lists,
#          often set() in a variable first).
# Comments of .c/.h/.cpp/.S files do not count as code for names and
# identifiers: a name only a comment mentions is not defined (nor does
# this script, which quotes stale names as examples).
# A doc may name something that is deliberately not in the tree (the
# reader's own hello.c, Tokio's functions): a line holding
# 'check-docs: skip WORD... (why)' (in an HTML comment in markdown)
# exempts those words, up to the '(', in that file.
set -euo pipefail
cd "$(dirname "$0")/.."
exec python3 - "$(pwd)" <<'PY'
import os, re, sys, fnmatch

root = sys.argv[1]
EXT = ('c', 'h', 'cpp', 'md', 'cmake', 'sh', 'txt', 'py', 'rs', 'go',
       'toml', 'json', 'pc', 'in', 'map', 'conf')
TOPDIRS = ('src', 'include', 'test', 'docs', 'bench', 'examples', 'apps',
           'scripts', 'cmake', '.ci')
CODE_DIRS = ('include', 'src', 'examples', 'apps', 'test', 'bench',
             'scripts', 'cmake')

def walk(top):
    for d, dirs, files in os.walk(top):
        rel = os.path.relpath(d, root)
        dirs[:] = [x for x in dirs
                   if not (x.startswith('.') and x != '.ci')
                   and not x.startswith('build')
                   and not (rel == 'bench' and x == 'history')]
        for f in files:
            yield os.path.join(d, f)

all_files = [os.path.relpath(p, root) for p in walk(root)]
basenames = set(os.path.basename(p) for p in all_files)

# Names of the code.
name_re = re.compile(r'(?<![A-Za-z0-9_/.])(?:fut_|FUT_)[A-Za-z0-9_]*')
code_names = set()
code_ids = set()
comment_re = re.compile(r'/\*.*?\*/|//[^\n]*', re.S)
for p in all_files:
    top = p.split(os.sep, 1)[0]
    if p.endswith('.md') or p == os.path.join('scripts', 'check-docs.sh'):
        continue                # (this file quotes examples of stale names)
    if top in CODE_DIRS or os.path.basename(p) == 'CMakeLists.txt':
        try:
            with open(os.path.join(root, p), encoding='utf-8',
                      errors='replace') as fh:
                text = fh.read()
            if p.endswith(('.c', '.h', '.cpp', '.S')):
                # A name only a comment mentions is not in the code.
                text = comment_re.sub(' ', text)
            # '\nfut_x' in a C string is a word too.
            code_names.update(re.findall(
                r'(?:(?<![A-Za-z0-9_])|(?<=\\[nrt]))(?:fut_|FUT_)\w*', text))
            code_ids.update(re.findall(r'\w+', text))
        except OSError:
            pass

# The prose: (file, [(line number, text)]).
docs = []
for p in sorted(all_files):
    if p.endswith('.md'):
        with open(os.path.join(root, p), encoding='utf-8') as fh:
            docs.append((p, list(enumerate(fh.read().split('\n'), 1))))
    elif p.startswith('examples' + os.sep) and p.endswith('.c'):
        lines = []
        with open(os.path.join(root, p), encoding='utf-8') as fh:
            for i, l in enumerate(fh, 1):
                lines.append((i, l.rstrip('\n')))
                if '*/' in l:
                    break
        docs.append((p, lines))

path_tok = re.compile(r'[][A-Za-z0-9_.+*/-]+')
ext_re = re.compile(r'\.(?:' + '|'.join(EXT) + r')$')
url_re = re.compile(r'[A-Za-z][A-Za-z0-9+.-]*://\S*')
skip_re = re.compile(r'check-docs:\s*skip\s+([^(>*]*)')
shared = os.path.join(os.path.dirname(root), 'shared')

def path_exists(tok, docdir):
    if '.' not in os.path.basename(tok) and \
            path_exists(tok.rstrip('/') + '.c', docdir):
        return True
    if not tok.endswith('.in') and path_exists(tok + '.in', docdir):
        return True
    bases = [root, os.path.join(root, docdir), os.path.join(root, 'include')]
    for b in bases:
        full = os.path.normpath(os.path.join(b, tok))
        if '*' in tok or '[' in tok:
            import glob
            if glob.glob(full):
                return True
        elif os.path.exists(full):
            return True
    if '/' not in tok.rstrip('/'):
        if '*' in tok:
            return any(fnmatch.fnmatch(b, tok) for b in basenames)
        return tok in basenames
    return False

def is_path(tok):
    first = tok.split('/', 1)[0]
    if '/' in tok and first in TOPDIRS:
        return True
    return bool(ext_re.search(tok)) and not tok.startswith('.')

def name_ok(n):
    if '*' in n:
        return any(fnmatch.fnmatchcase(c, n) for c in code_names)
    return n in code_names

bad = []
for doc, lines in docs:
    docdir = os.path.dirname(doc)
    skips = set()
    for _, l in lines:
        for m in skip_re.finditer(l):
            skips.update(m.group(1).split())
    for ln, line in lines:
        if 'check-docs:' in line:
            continue
        text = url_re.sub(' ', line)
        for m in name_re.finditer(text):
            n = m.group(0)
            after = text[m.end():m.end() + 1]
            if after == '<' or n in ('fut_', 'fut__', 'FUT_'):
                continue
            if after == '*':      # 'fut_spawn*': the '*' is a wildcard
                n += '*'
            if n in skips or name_ok(n):
                continue
            bad.append((doc, ln, n))
        for m in path_tok.finditer(text):
            tok = m.group(0).rstrip('.,:);')
            start = m.start()
            if start > 0 and text[start - 1] in '<$@~':
                continue
            if text[m.end():m.end() + 1] == '<':
                continue
            if not tok or tok.startswith(('/', '~')) or tok in skips:
                continue
            if tok.startswith('../shared/'):
                if os.path.isdir(shared):
                    if not os.path.exists(os.path.join(shared, tok[10:])):
                        bad.append((doc, ln, tok))
                continue
            if tok.startswith('build/') or not is_path(tok):
                continue
            if not path_exists(tok, docdir):
                bad.append((doc, ln, tok))

tails = set()
for c in code_names:
    if c.startswith('fut_') and not c.startswith('fut__'):
        parts = c.split('_')
        for k in range(1, len(parts)):
            tails.add('_'.join(parts[k:]))
tick_re = re.compile(r'`([^`]+)`')
ident_re = re.compile(
    r'(?<![\w./:-])([a-z][a-z0-9]*_[a-z0-9_]*)(?![\w./*<:!-])')
for doc, lines in docs:
    skips = set()
    for _, l in lines:
        for m in skip_re.finditer(l):
            skips.update(m.group(1).split())
    for ln, line in lines:
        if 'check-docs:' in line:
            continue
        for bt in tick_re.findall(line):
            for n in ident_re.findall(bt):
                if n.startswith('fut_') or n in skips or n in code_ids or \
                        n in tails:
                    continue
                bad.append((doc, ln, n))

# Test areas and the words of their registration.
areas = {}
for p in all_files:
    if p.startswith('test' + os.sep) and p.endswith('.cmake'):
        with open(os.path.join(root, p), encoding='utf-8') as fh:
            text = re.sub(r'#[^\n]*', ' ', fh.read())
        words = set(re.findall(r'\w+', text))
        for a in re.findall(r'fut_(?:check|example)_test\(\s*(\w+)', text):
            areas.setdefault(a, set()).update(words)
test_re = re.compile(r'(?:valgrind\.)?(\w+)\.(\w+)(?:\.\w+)*')
for doc, lines in docs:
    for ln, line in lines:
        for bt in tick_re.findall(line):
            m = test_re.fullmatch(bt)
            if m and m.group(1) in areas and not ext_re.search(bt) and \
                    m.group(2) not in areas[m.group(1)]:
                bad.append((doc, ln, bt))

bad.sort(key=lambda b: (b[0], b[1]))
for doc, ln, n in bad:
    print(f'{doc}:{ln}: {n}')
sys.stdout.flush()
if bad:
    print(f'check-docs: {len(bad)} stale reference(s)', file=sys.stderr)
    sys.exit(1)
PY
