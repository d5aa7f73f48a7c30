#!/usr/bin/env python3
# Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
#
# test-mongod's include rule (README.md, "Layout"): the whole server, md_server_t in
# net/server.h, is known only to net/, commands/, shard/, main.c and the test programs;
# data/, txn/, changestream/ and the rest get the part they work on. Fails when a file of
# another folder includes net/server.h, directly or through other headers, naming the chain;
# and when a file of KNOWN_EDGES (the README's known edges, which must only shrink) no
# longer needs its entry, so that the list stays true. Also fails on a folder include circle
# between data/ and the folders above it.
#
# Usage: test-includes.py [<tests/mongod source dir>] (defaults to .. from here).
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
SERVER = "net/server.h"
ALLOWED = ("net/", "commands/", "shard/", "tests/", "main.c")
# Files outside ALLOWED that still reach net/server.h, each with the reason (README.md).
KNOWN_EDGES = {
    # auth/'s user commands are command handlers (md_cmd_t): auth-cmd.h names commands.h.
    "auth/auth-cmd.h": "user commands' handlers",
    "auth/auth-check.c": "user commands' handlers",
    "auth/auth-scram.c": "user commands' handlers",
    "auth/auth-users.c": "user commands' handlers",
}


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
    """The server file that @src's #include "@inc" names, or None (libbson, engine's own)."""
    if inc in files:
        return inc
    here = os.path.normpath(os.path.join(os.path.dirname(src), inc))
    return here if here in files else None


def chain_to_server(files, start):
    """The include chain from @start to net/server.h (a list of files), or None."""
    seen, todo = {start: None}, [start]
    while todo:
        f = todo.pop(0)
        for inc in files.get(f, ()):
            g = resolve(files, f, inc)
            if g is None or g in seen:
                continue
            seen[g] = f
            if g == SERVER:
                path = [g]
                while seen[path[-1]] is not None:
                    path.append(seen[path[-1]])
                return list(reversed(path))
            todo.append(g)
    return None


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..")
    files = load(root)
    if SERVER not in files:
        print("FAIL: %s not found under %s" % (SERVER, root))
        return 1
    failed = 0
    for f in sorted(files):
        if f == SERVER or f.startswith(ALLOWED) or f.startswith("engine/"):
            continue
        chain = chain_to_server(files, f)
        if chain and f not in KNOWN_EDGES:
            print("FAIL: %s reaches %s: %s" % (f, SERVER, " -> ".join(chain)))
            failed += 1
        elif not chain and f in KNOWN_EDGES:
            print("FAIL: %s no longer reaches %s: drop it from KNOWN_EDGES" % (f, SERVER))
            failed += 1
    for f in sorted(files):
        if f.startswith("engine/"):
            bad = [i for i in files[f] if resolve(files, f, i) and
                   not resolve(files, f, i).startswith("engine/")]
            for i in bad:
                print("FAIL: %s (the pure engine) includes %s" % (f, i))
                failed += 1
    print("mongod-includes: %d file(s) break the rule, %d known edge(s)"
          % (failed, len(KNOWN_EDGES)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
