# Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
"""What the example tests (test-contacts-*.py, test-consumer.py) share: counting checks,
the closing line scripts/test-summary reads ("NAME: N passed, N failed"), stopping a child
process, and a small HTTP client for contacts-service."""
import json
import socket
import subprocess
import time
import urllib.error
import urllib.request


class Checks:
    """Counts checks; a failed one is printed at once with its detail."""

    def __init__(self, name):
        self.name = name
        self.passed = 0
        self.failed = 0

    def check(self, what, cond, detail=""):
        if cond:
            self.passed += 1
        else:
            self.failed += 1
            print("FAIL: %s %s" % (what, detail), flush=True)

    def summary(self):
        """Prints the closing line and returns the exit status."""
        print("%s: %d passed, %d failed" % (self.name, self.passed, self.failed))
        return 1 if self.failed else 0


def stop(proc, timeout):
    """SIGTERM, then SIGKILL after `timeout` seconds. Returns (exit status, stderr or None)."""
    proc.terminate()
    try:
        _, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
    return proc.returncode, err


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Client:
    """Calls contacts-service; returns (status, headers, JSON body or None)."""

    def __init__(self, base):
        self.base = base

    def call(self, method, path, body=None, headers=None, raw=None):
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        hdrs = {"Content-Type": "application/json"} if data is not None else {}
        hdrs.update(headers or {})
        req = urllib.request.Request(self.base + path, data=data, method=method, headers=hdrs)
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                text = r.read().decode()
                return r.status, dict(r.headers), (json.loads(text) if text.strip() else None)
        except urllib.error.HTTPError as e:
            text = e.read().decode()
            try:
                doc = json.loads(text) if text.strip() else None
            except ValueError:
                doc = text
            return e.code, dict(e.headers), doc


def wait_healthy(c, proc):
    for _ in range(100):
        if proc.poll() is not None:
            return False
        try:
            if c.call("GET", "/healthz")[0] == 200:
                return True
        except OSError:
            pass
        time.sleep(0.1)
    return False
