# Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
"""What the example tests (test-contacts-rest.py, test-consumer.py) share: counting checks,
the closing line scripts/test-summary reads ("NAME: N passed, N failed"), and stopping a
child process."""
import subprocess


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
