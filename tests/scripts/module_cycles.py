#!/usr/bin/env python3
"""Lists import cycles between the modules of one crate.

Usage: module_cycles.py CRATE_SRC_DIR [--files] [--with-tests]

Exits 1 when it finds a cycle. Unit-test modules (any module path with a
`tests` or `*_tests` segment) are left out unless --with-tests.

Every `use` tree and every inline `crate::`/`super::`/`self::` path in code
(comments stripped) is resolved to the file that *defines* the item (through
`pub use` re-exports and globs), giving a file -> file graph. Without
--files the graph is collapsed to modules: a file belongs to its top-level
module under each common parent, so that mod.rs re-exporting a child is not
a cycle but two sibling modules that reach each other (directly or around a
loop) are. Prints each strongly connected component with its edges.
"""
import os
import re
import sys

root = sys.argv[1].rstrip('/')
FILES_MODE = '--files' in sys.argv
WITH_TESTS = '--with-tests' in sys.argv

mods = {}  # module path tuple -> file
for d, _, fs in os.walk(root):
    for f in fs:
        if not f.endswith('.rs'):
            continue
        p = os.path.join(d, f)
        rel = os.path.relpath(p, root)[:-3].split(os.sep)
        if rel in (['lib'], ['main']):
            key = ()
        elif rel[-1] == 'mod':
            key = tuple(rel[:-1])
        else:
            key = tuple(rel)
        # skip binaries under src/bin; unit-test modules (a `tests` segment,
        # or one named `*_tests`) import what they test and are not a layer
        # of their own
        if key and key[0] == 'bin':
            continue
        if any(k == 'tests' or k.endswith('_tests') for k in key) and not WITH_TESTS:
            continue
        mods[key] = p

def strip(text):
    text = re.sub(r'/\*.*?\*/', '', text, flags=re.S)
    out = []
    for line in text.split('\n'):
        # drop // comments (not inside strings, approximately)
        i = line.find('//')
        if i >= 0 and line[:i].count('"') % 2 == 0:
            line = line[:i]
        out.append(line)
    text = '\n'.join(out)
    text = re.sub(r'"(\\.|[^"\\])*"', '""', text)
    return text

src = {k: strip(open(v).read()) for k, v in mods.items()}

DEF = re.compile(r'^(?:pub(?:\([^)]*\))?\s+)?(?:async\s+|unsafe\s+|const\s+(?=fn))*'
                 r'(fn|struct|enum|trait|type|const|static|mod|union)\s+(\w+)', re.M)
defs = {k: set(m.group(2) for m in DEF.finditer(s)) for k, s in src.items()}

USE = re.compile(r'^\s*(pub(?:\([^)]*\))?\s+)?use\s+([^;]+);', re.M)

def expand(tree):
    tree = re.sub(r'\s+as\s+\w+', '', tree)  # `X as Y` imports X
    tree = re.sub(r'\s+', '', tree)
    res = []
    def rec(prefix, t):
        # split top-level commas
        parts, depth, cur = [], 0, ''
        for ch in t:
            if ch == '{':
                depth += 1
            elif ch == '}':
                depth -= 1
            if ch == ',' and depth == 0:
                parts.append(cur); cur = ''
            else:
                cur += ch
        if cur:
            parts.append(cur)
        for p in parts:
            if '{' in p:
                i = p.index('{')
                head = p[:i].rstrip(':')
                inner = p[i + 1:-1]
                rec(prefix + ([s for s in head.split('::') if s]), inner)
            else:
                segs = [s for s in p.split('::') if s]
                if segs and segs[-1] == 'self':
                    segs = segs[:-1]
                res.append(prefix + segs)
    rec([], tree)
    return res

uses = {}  # module -> list of (is_pub, segs)
for k, s in src.items():
    lst = []
    for m in USE.finditer(s):
        for segs in expand(m.group(2)):
            lst.append((bool(m.group(1)), segs))
    uses[k] = lst

def absolute(k, segs):
    """Make a path absolute from module k; None for external crates."""
    if not segs:
        return None
    s0 = segs[0]
    if s0 == 'crate':
        return list(segs[1:])
    if s0 == 'self':
        return list(k) + list(segs[1:])
    if s0 == 'super':
        base = list(k)
        i = 0
        while i < len(segs) and segs[i] == 'super':
            base = base[:-1]
            i += 1
        return base + list(segs[i:])
    # uniform paths: a child module, or a name this module defines/imports
    if tuple(k) + (s0,) in mods:
        return list(k) + list(segs)
    return None

def resolve(path, depth=0):
    """path: absolute segs. Returns the defining module key, or None."""
    if depth > 12:
        return None
    # longest module prefix
    i = 0
    cur = ()
    while i < len(path) and cur + (path[i],) in mods:
        cur = cur + (path[i],)
        i += 1
    if i == len(path):
        return cur  # the module itself
    name = path[i]
    if name in defs.get(cur, ()):
        return cur
    if name == '*':
        return cur
    for is_pub, segs in uses.get(cur, []):
        if segs and segs[-1] == name:
            a = absolute(cur, segs)
            if a is not None:
                r = resolve(a, depth + 1)
                if r is not None:
                    return r
    for is_pub, segs in uses.get(cur, []):
        if segs and segs[-1] == '*':
            a = absolute(cur, segs[:-1])
            if a is not None:
                r = resolve(a + [name], depth + 1)
                if r is not None and (name in defs.get(r, ()) or r != tuple(a)):
                    return r
    return cur

IDENT = re.compile(r'\b[A-Za-z_]\w*\b')
INLINE = re.compile(r'\b(?:crate|super|self)(?:::\w+)+')

edges = {}  # (a, b) -> example
for k, s in src.items():
    body_idents = None
    for is_pub, segs in uses[k]:
        a = absolute(k, segs)
        if a is None:
            continue
        if a and a[-1] == '*':
            # glob: the names this file uses that the target provides
            if body_idents is None:
                body_idents = set(IDENT.findall(USE.sub('', s)))
            base = a[:-1]
            tgt = resolve(base + ['__nothing__'])
            names = set(defs.get(tuple(base), ())) | {sg[-1] for _, sg in uses.get(tuple(base), []) if sg}
            for n in sorted(names & body_idents):
                if tuple(base) + (n,) in mods and not re.search(r'\b' + n + r'::', s):
                    continue  # a module name seen only as a word (format!, tests)
                r = resolve(base + [n])
                if r is not None and r != k:
                    edges.setdefault((k, r), 'use ' + '::'.join(segs[:-1]) + '::* (' + n + ')')
            continue
        r = resolve(a)
        if r is not None and r != k:
            edges.setdefault((k, r), 'use ' + '::'.join(segs))
    for m in INLINE.finditer(USE.sub('', s)):
        segs = m.group(0).split('::')
        a = absolute(k, segs)
        if a is None:
            continue
        r = resolve(a)
        if r is not None and r != k:
            edges.setdefault((k, r), m.group(0))

def unit(k, other):
    """Collapse k relative to other: the child of their common parent."""
    i = 0
    while i < min(len(k), len(other)) and k[i] == other[i]:
        i += 1
    return k[:i + 1] if i < len(k) else k

# module-level graph: for each edge a->b, collapse both to siblings under
# their common ancestor; an edge from a module to its own ancestor/descendant
# (parent <-> child) is kept only in --files mode.
g = {}
ex = {}
for (a, b), why in edges.items():
    if FILES_MODE:
        ua, ub = a, b
    else:
        ua, ub = unit(a, b), unit(b, a)
        if ua == ub or ua[:len(ub)] == ub or ub[:len(ua)] == ua:
            continue
    g.setdefault(ua, set()).add(ub)
    ex.setdefault((ua, ub), (a, b, why))

# Tarjan
index, low, stack, on, comps = {}, {}, [], set(), []
counter = [0]
sys.setrecursionlimit(10000)
def strong(v):
    index[v] = low[v] = counter[0]; counter[0] += 1
    stack.append(v); on.add(v)
    for w in g.get(v, ()):
        if w not in index:
            strong(w); low[v] = min(low[v], low[w])
        elif w in on:
            low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        c = []
        while True:
            w = stack.pop(); on.discard(w); c.append(w)
            if w == v:
                break
        comps.append(c)
nodes = set(g) | {w for vs in g.values() for w in vs}
for v in sorted(nodes):
    if v not in index:
        strong(v)

name = lambda k: '::'.join(k) or 'crate'
cyc = [c for c in comps if len(c) > 1]
print(f'{root}: {len(mods)} files, {len(edges)} file edges, {len(cyc)} cycle(s)')
for c in cyc:
    cs = set(c)
    print('  cycle: ' + ', '.join(sorted(name(x) for x in c)))
    for (ua, ub), (a, b, why) in sorted(ex.items()):
        if ua in cs and ub in cs:
            print(f'    {name(ua)} -> {name(ub)}   ({name(a)}: {why})')
sys.exit(1 if cyc else 0)
