#!/usr/bin/python3
# Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
"""The seq rule (issue 14, item 3), end to end on both paths that find events: documents
written outside liboutbox with repeated or decreasing seqs ([2,1,2], [1,1], [2,1]). The first
event of each is published; every later one whose seq is not above one before it is
dead-lettered with a reason; nothing stays pending; a later sweep publishes nothing more.
Before, the relay published the first element and left the rest pending for good, silently,
and a sweep later published seq 1 after seq 2. Also: what a sweep found and cannot publish shows
in the pending-age gauge.

usage: test_seq.py OUTBOX_RELAY [TEST_NAME ...]   (run under tests/fixtures/with-servers)
"""

import json
import os
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from relaytest import db_name  # noqa: E402 (the run's database names)
from relaytest import (MONGO_URI, Int64, Relay, Subscriber, event, free_port,  # noqa: E402
                       pymongo, run_tests, wait_until)

RELAY_BIN = sys.argv[1] if len(sys.argv) > 1 else "outbox-relay"
RUN = "%d" % os.getpid()
client = pymongo.MongoClient(MONGO_URI) if MONGO_URI else None
REASON = "seq not above the entity's last seq"
CASES = {"twice-back": [2, 1, 2], "same": [1, 1], "down": [2, 1], "fine": [1, 2, 3]}


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def names(test):
    return db_name("relay_seq_%s_%s" % (test, RUN)), "things", "relay-seq-%s-%s" % (test, RUN)


def write_cases(coll):
    """Inserts one document per case; returns {entity: (ids to deliver, ids to dead-letter)}."""
    expected = {}
    for eid, seqs in CASES.items():
        evs = [event(s) for s in seqs]
        coll.insert_one({"_id": eid, "version": Int64(1), "eventSeq": Int64(max(seqs)),
                         "events": evs})
        deliver, dead, top = [], [], 0
        for e, s in zip(evs, seqs):
            (deliver if s > top else dead).append(e["id"])
            top = max(top, s)
        expected[eid] = (deliver, dead)
    return expected


def delivered(sub):
    out = {}
    for _, payload, _ in sub.snapshot():
        ce = json.loads(payload)
        out.setdefault(ce["subject"], []).append(ce["id"])
    return out


def verify(coll, sub, expected):
    check(wait_until(lambda: all(not d.get("events") for d in coll.find()), 30),
          "events still pending: %s" % {d["_id"]: [e["seq"] for e in d.get("events", [])]
                                        for d in coll.find() if d.get("events")})
    n = sum(len(d) for d, _ in expected.values())
    check(wait_until(lambda: sub.count() >= n, 20), "only %d of %d delivered" % (sub.count(), n))
    time.sleep(0.5)
    got = delivered(sub)
    for eid, (deliver, dead) in expected.items():
        doc = coll.find_one({"_id": eid})
        letters = doc.get("deadLetters", [])
        check(got.get(eid) == deliver, "%s: delivered %s, expected %s" % (eid, got.get(eid),
                                                                           deliver))
        check([d["event"]["id"] for d in letters] == dead,
              "%s: dead letters %s, expected %s" % (eid, [d["event"]["seq"] for d in letters],
                                                    dead))
        check(all(REASON in d["reason"] for d in letters),
              "%s: reasons %s" % (eid, [d["reason"] for d in letters]))
        check(doc["version"] == 1, "%s: the relay touched the version" % eid)


def sweep_again(dbname, cname, rname, sub):
    """Without its checkpoint the relay sweeps: nothing is left to publish."""
    before = sub.count()
    client[dbname]["outbox_relay_state"].delete_one({"_id": rname})
    relay = Relay(RELAY_BIN, dbname, [cname], rname)
    try:
        check(relay.wait_log("sweep done"), "no sweep")
        time.sleep(1)
        check(sub.count() == before, "the sweep published %d more" % (sub.count() - before))
    finally:
        check(relay.stop() == 0, "relay did not exit 0")


def test_stream_path():
    """Documents written while the relay watches: judged from the change stream."""
    dbname, cname, rname = names("stream")
    coll = client[dbname][cname]
    sub = Subscriber("outbox/%s/#" % cname)
    relay = Relay(RELAY_BIN, dbname, [cname], rname)
    try:
        check(relay.wait_log("change stream open"), "relay did not open its stream")
        expected = write_cases(coll)
        verify(coll, sub, expected)
        check(relay.log_text().count("dead-lettered an event") == 4, "not one line per dead "
              "letter: %s" % [ln for ln in relay.log_text().splitlines() if "dead-let" in ln])
        check(relay.stop() == 0, "relay did not exit 0")
        sweep_again(dbname, cname, rname, sub)
    finally:
        relay.stop()
        sub.close()


def test_sweep_path():
    """Documents written before the relay's first start: judged by the sweep."""
    dbname, cname, rname = names("sweep")
    coll = client[dbname][cname]
    sub = Subscriber("outbox/%s/#" % cname)
    expected = write_cases(coll)
    relay = Relay(RELAY_BIN, dbname, [cname], rname)
    try:
        verify(coll, sub, expected)
        check("sweeping" in relay.log_text(), "no sweep")
    finally:
        relay.stop()
        sub.close()


def pending_age(port):
    try:
        text = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=5).read()
    except OSError:
        return None
    for line in text.decode().splitlines():
        if line.startswith("outbox_relay_oldest_pending_event_age_seconds "):
            return float(line.split()[1])
    return None


def test_swept_events_show_their_age():
    """Events a sweep found and cannot publish (the broker is unreachable) show in the
    pending-age gauge; it read 0, so an alert on it missed them."""
    dbname, cname, rname = names("age")
    coll = client[dbname][cname]
    coll.insert_one({"_id": "stuck", "version": Int64(1), "eventSeq": Int64(1),
                     "events": [event(1)]})
    port = free_port()
    relay = Relay(RELAY_BIN, dbname, [cname], rname, ["--metrics-listen", "127.0.0.1:%d" % port],
                  mqtt_uri="tcp://127.0.0.1:%d" % free_port())
    try:
        check(relay.wait_log("sweep done"), "no sweep")
        check(wait_until(lambda: (pending_age(port) or 0) >= 2, 20),
              "pending-age gauge %s while a swept event waits" % pending_age(port))
    finally:
        relay.stop()


def labelled(port, name):
    """{collection: value} of a per-collection gauge on a relay's /metrics."""
    try:
        text = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=5).read()
    except OSError:
        return {}
    out = {}
    for line in text.decode().splitlines():
        if line.startswith(name + "{"):
            out[line.split('collection="')[1].split('"')[0]] = float(line.split()[-1])
    return out


def test_scan_skips_an_events_field_that_is_not_an_array():
    """Issue 29, 7: $set: {"events.0": ...} on a document without the array makes an object,
    which the partial index takes; the scanner's $size then failed for the whole collection,
    for good, and its gauges froze. Now such a document is counted apart (a gauge), named
    once in the log, and the others are still counted."""
    import datetime
    dbname, cname, rname = names("notarray")
    coll = client[dbname][cname]
    old = event(1)
    old["time"] = datetime.datetime.utcnow() - datetime.timedelta(hours=5)
    coll.insert_one({"_id": "fine", "version": Int64(1), "eventSeq": Int64(1), "events": [old]})
    coll.insert_one({"_id": "odd", "version": Int64(1), "eventSeq": Int64(1),
                     "events": {"0": event(1)}})
    port = free_port()
    relay = Relay(RELAY_BIN, dbname, [cname], rname,
                  ["--metrics-listen", "127.0.0.1:%d" % port, "--pending-scan-interval-ms", "300"],
                  mqtt_uri="tcp://127.0.0.1:%d" % free_port())
    try:
        check(wait_until(lambda: labelled(port, "outbox_relay_stored_malformed_documents")
                         .get(cname) == 1, 20),
              "malformed gauge %s; log:\n%s" % (
                  labelled(port, "outbox_relay_stored_malformed_documents"),
                  relay.log_text()[-2000:]))
        check(labelled(port, "outbox_relay_stored_pending_events").get(cname) == 1,
              "pending gauge %s" % labelled(port, "outbox_relay_stored_pending_events"))
        check(wait_until(lambda: (pending_age(port) or 0) > 4 * 3600, 10),
              "pending-age gauge %s while a 5 h old event waits" % pending_age(port))
        time.sleep(1)  # a few more scans
        text = relay.log_text()
        named = "document %s/odd: its events or deadLetters field is not an array" % cname
        check(text.count(named) == 1, "named %d times:\n%s" % (text.count(named), text[-2000:]))
        check("counting the pending events" not in text, "the scan failed:\n" + text[-2000:])
    finally:
        relay.stop()


TESTS = [test_stream_path, test_sweep_path, test_swept_events_show_their_age,
         test_scan_skips_an_events_field_that_is_not_an_array]


def main():
    return run_tests("relay-seq", TESTS, sys.argv[2:])


if __name__ == "__main__":
    sys.exit(main())
