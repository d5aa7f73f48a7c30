# Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
"""The Node side of test-languages.py: installing the examples' packages, and the Node
writer's conflict checks (node-conflict.js)."""
import fcntl
import os
import shutil
import subprocess


def prepare(node_dir, examples):
    """`npm ci` of examples/node/package-lock.json into node_dir, once per lock file content;
    --prefer-offline takes the packages from npm's cache (shared by every build on the
    machine) when they are there. Returns (NODE_PATH, None), or (None, why not)."""
    if not node_dir:
        return None, "no --node-dir given"
    if not shutil.which("node") or not shutil.which("npm"):
        return None, "node or npm not found (needs Node.js >= 16 with npm)"
    major = subprocess.run(["node", "-p", "process.versions.node.split('.')[0]"],
                           capture_output=True, text=True).stdout.strip()
    if not major.isdigit() or int(major) < 16:
        return None, "node %s is too old (the mongodb driver 6.x needs >= 16.20)" % major
    os.makedirs(node_dir, exist_ok=True)
    # Four tests share node_dir and meson starts them at once: `npm ci` removes node_modules
    # first, so two first installs must not overlap (a CI run found the driver without its
    # 'bson' package). The second waits here, then finds the stamp and installs nothing.
    with open(os.path.join(node_dir, ".install.lock"), "w") as lockfile:
        fcntl.flock(lockfile, fcntl.LOCK_EX)
        return install(node_dir, examples)


def install(node_dir, examples):
    """prepare()'s work, under its lock."""
    modules = os.path.join(node_dir, "node_modules")
    stamp = os.path.join(modules, ".outbox-package-lock.json")
    lock = os.path.join(examples, "node", "package-lock.json")
    with open(lock) as f:
        wanted = f.read()
    if os.path.exists(stamp) and open(stamp).read() == wanted:
        return modules, None
    for name in ("package.json", "package-lock.json"):
        shutil.copy(os.path.join(examples, "node", name), node_dir)
    try:
        r = subprocess.run(["npm", "ci", "--prefer-offline", "--no-audit", "--no-fund",
                            "--loglevel=error"], cwd=node_dir, capture_output=True, text=True,
                           timeout=300)
    except subprocess.TimeoutExpired:
        return None, "npm ci took more than 5 minutes (registry unreachable?)"
    if r.returncode != 0:
        return None, ("npm ci failed (registry unreachable and the packages not in npm's "
                      "cache?): %s" % " / ".join(r.stderr.strip().splitlines()[:3]))
    with open(stamp, "w") as f:
        f.write(wanted)
    return modules, None


def check_node_conflicts(check, node_path, mongo, examples):
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "node-conflict.js")
    db = os.environ.get("OUTBOX_TEST_DB_PREFIX", "") + "lang_conflicts_%d" % os.getpid()
    r = subprocess.run(["node", script, os.path.join(examples, "node", "writer.js"), mongo, db],
                       capture_output=True, text=True,
                       env=dict(os.environ, NODE_PATH=node_path), timeout=120)
    out = r.stdout.split()
    check("node writer: a stale expected version is a Conflict", "stale-refused" in out, r)
    check("node writer: a change between its read and its write is a Conflict",
          "race-refused" in out, r)
    check("node writer: a refused commit writes nothing", "unchanged" in out, r)
    check("node writer: expiresAt stored as a Date", "expires-at" in out, r)
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "node-decode.js")
    r = subprocess.run(["node", script, os.path.join(examples, "node", "consumer.js")],
                       capture_output=True, text=True, env=dict(os.environ, NODE_PATH=node_path),
                       timeout=60)
    check("node consumer: binary data decoded in both payload modes",
          "binary-data-decoded" in r.stdout.split(), r)
