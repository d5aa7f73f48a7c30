#!/usr/bin/python3
# Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
"""The Python consumer's partition sets (examples/python/partitions.py) against the shared
vectors of tests/fixtures/partition-sets.json, which the C and Node consumers' tests load too
(issue 33); then outbox_consumer.py itself must refuse a bad set before it connects.

usage: test-partition-sets.py VECTORS.json"""
import json
import os
import subprocess
import sys

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples")
sys.path.insert(0, os.path.join(EXAMPLES, "python"))
import partitions  # noqa: E402


def expected(case):
    if case["partitions"] is None:
        return [case["filter"]]
    return [case["filter"].replace("{partition}", str(p))
            for lo, hi in case["partitions"] for p in range(lo, hi + 1)]


def main(path):
    with open(path) as f:
        vectors = json.load(f)
    failures = []
    if vectors["max_partitions"] != partitions.MAX_PARTITIONS:
        failures.append("MAX_PARTITIONS %d, vectors say %d" % (partitions.MAX_PARTITIONS,
                                                              vectors["max_partitions"]))
    for case in vectors["cases"]:
        what = "filter %r set %r" % (case["filter"], case["set"])
        try:
            got = partitions.filters(case["filter"], case["set"])
        except ValueError as e:
            if case["valid"]:
                failures.append("%s refused: %s" % (what, e))
            elif not str(e):
                failures.append("%s refused without a message" % what)
            continue
        if not case["valid"]:
            failures.append("%s accepted (%d filters): %s" % (what, len(got), case["why"]))
        elif got != expected(case):
            failures.append("%s gave %s" % (what, got[:8]))
    # The consumer itself: a bad set ends it with the reason, before any connection (port 9
    # on loopback: nothing listens, and it must not get that far).
    if not os.path.exists("/usr/lib/python3/dist-packages/paho"):
        print("SKIP (consumer process only): python3-paho-mqtt is not installed")
    else:
        for bad in ("15-0", "", "-5", "1.5"):
            r = subprocess.run(["/usr/bin/python3", os.path.join(EXAMPLES, "python",
                                                                  "outbox_consumer.py"),
                                "tcp://127.0.0.1:9", "o/{partition}/#", "c", bad],
                               capture_output=True, text=True, timeout=30)
            if r.returncode == 0 or "partition set" not in r.stderr:
                failures.append("outbox_consumer.py accepted set %r: %s" % (bad, r.stderr))
    for f in failures:
        print("FAIL: " + f)
    print("%d cases, %d failures" % (len(vectors["cases"]), len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
