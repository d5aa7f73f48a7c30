#!/usr/bin/env python3
# Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
#
# The relay's include graph points down (relay/README.md, "Layout"): fails when a folder of
# relay/ includes, directly or through other folders, a folder that includes it back, or when
# a module (x.c, x.h and x-private.h of one folder are one module) includes, directly or through other
# modules, one that includes it back. It names the includes that close each circle.
#
# Usage: test-includes.py <relay source dir> (defaults to ../../relay from here).
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def load(root):
    files = {}
    for d, _, names in os.walk(root):
        for n in names:
            if n.endswith(('.c', '.h')):
                p = os.path.relpath(os.path.join(d, n), root)
                with open(os.path.join(d, n), encoding='utf-8') as f:
                    files[p] = INCLUDE.findall(f.read())
    return files


def resolve(files, src, inc):
    """The relay file that @src's #include "@inc" names, or None (liboutbox, system)."""
    here = os.path.normpath(os.path.join(os.path.dirname(src), inc))
    if here in files:
        return here
    return inc if inc in files else None


def folder(p):
    return os.path.dirname(p) or '.'


def module(p):
    """x.c, x.h and x-private.h (x's state, shared with its own .c files) are one module."""
    stem = os.path.splitext(p)[0]
    return stem[:-len('-private')] if stem.endswith('-private') else stem


def cycles(edges):
    """Strongly connected components of more than one node (Tarjan), each sorted."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def graph(files, key):
    """@key(file) -> @key(included file) edges, each with the includes that make it."""
    edges, why = {}, {}
    for src, incs in files.items():
        for inc in incs:
            dst = resolve(files, src, inc)
            if dst is None or key(src) == key(dst):
                continue
            edges.setdefault(key(src), set()).add(key(dst))
            why.setdefault((key(src), key(dst)), []).append(f'{src} includes "{inc}"')
    return edges, why


def report(kind, comps, edges, why):
    for comp in comps:
        members = set(comp)
        print(f'not ok: {kind} circle: {" <-> ".join(comp)}')
        for a in comp:
            for b in sorted(edges.get(a, ())):
                if b in members:
                    for line in why[(a, b)]:
                        print(f'    {line}')
    return len(comps)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, '..', '..', 'relay')
    files = load(root)
    if len(files) < 20:
        print(f'not ok: only {len(files)} C files under {root}: wrong directory?')
        return 1
    bad = 0
    for kind, key in (('folder', folder), ('module', module)):
        edges, why = graph(files, key)
        bad += report(kind, cycles(edges), edges, why)
    n_edges = sum(len(v) for v in graph(files, folder)[0].values())
    print(f'{len(files)} files, {n_edges} folder edges: '
          f'{"ok" if not bad else f"{bad} circle(s)"}')
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
