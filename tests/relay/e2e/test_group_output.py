#!/usr/bin/python3
# Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
"""Members of one group whose output settings differ (issue 34, 7): a rolling enable of the
archive, where one member archives and the other not yet. Both say so (log, the gauge
outbox_relay_group_output_mismatch, a warning in /healthz that stays 200, so that a rollout is
not held up), and the flag goes once the group agrees again.

usage: test_group_output.py OUTBOX_RELAY [TEST_NAME ...]   (run under with-servers)
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from grouptest import MONGO_URI, Group, Member, pymongo, wait_until  # noqa: E402
from relaytest import db_name, run_tests  # noqa: E402 (on the path grouptest set)

RELAY_BIN = sys.argv[1] if len(sys.argv) > 1 else "outbox-relay"
RUN = "%d" % os.getpid()
client = pymongo.MongoClient(MONGO_URI) if MONGO_URI else None
GAUGE = "\noutbox_relay_group_output_mismatch %d\n"


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def test_rolling_archive_enable():
    dbname, cname, rname = db_name("group_output_%s" % RUN), "things", "grp-output-%s" % RUN
    a = Member(RELAY_BIN, dbname, [cname], rname, metrics=True)
    b = None
    try:
        group = Group(client, dbname, rname)
        check(wait_until(lambda: group.counts([a]) == [32], 20), "a does not own all")
        b = Member(RELAY_BIN, dbname, [cname], rname, ["--archive-collection", "arch"],
                   metrics=True)
        for m in (a, b):
            check(wait_until(lambda: GAUGE % 1 in m.http_get("/metrics")[1], 15),
                  "member %d: no output mismatch gauge" % m.n)
            status, body = m.http_get("/healthz")
            check(status == 200 and "publish with other settings" in body,
                  "member %d /healthz: %d %r" % (m.n, status, body))
            text = m.log_text()
            check("publishes its partitions otherwise" in text and
                  "archive-collection=arch" in text and "archive-collection=off" in text,
                  "member %d does not name both values" % m.n)
        check(b.proc.poll() is None, "b refused to join for an output setting")
        check(wait_until(lambda: sorted(group.counts([a, b])) == [16, 16], 30),
              "the group did not balance: %s" % group.counts([a, b]))
        check(a.stop() == 0, "a did not exit 0")
        check(wait_until(lambda: GAUGE % 0 in b.http_get("/metrics")[1], 15),
              "the flag stays once the group agrees")
    finally:
        for m in (a, b):
            if m and not m.stopped:
                m.stop()
        if client:
            client.drop_database(dbname)


if __name__ == "__main__":
    sys.exit(run_tests("group-e2e-output", [test_rolling_archive_enable], set(sys.argv[2:])))
