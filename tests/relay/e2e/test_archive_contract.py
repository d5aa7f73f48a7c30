#!/usr/bin/python3
# Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
"""The event contract across the relay, its archive and outbox-admin replay (issue 33): the
archive takes every event the relay publishes (normalised to the written form); an event id
that two entities share is dead-lettered for the second, never counted as archived; a
replayed message equals the live one byte for byte but for the replay marker, in both
payload modes, over MQTT 5 and 3.1.1.

usage: test_archive_contract.py OUTBOX_RELAY OUTBOX_ADMIN [TEST_NAME ...]   (under with-servers)
"""

import json
import os
import subprocess
import sys
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from relaytest import db_name  # noqa: E402 (the run's database names)
from relaytest import (MONGO_URI, MQTT_URI, Entities, Relay, Subscriber, event,  # noqa: E402
                       free_port, metric, pymongo, run_tests, wait_until)
from bson.int64 import Int64  # noqa: E402

RELAY_BIN = sys.argv[1] if len(sys.argv) > 1 else "outbox-relay"
ADMIN_BIN = sys.argv[2] if len(sys.argv) > 2 else "outbox-admin"
RUN = "%d" % os.getpid()
client = pymongo.MongoClient(MONGO_URI) if MONGO_URI else None
ARCHIVE = "archive"
TP = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def names(test):
    return db_name("contract_%s_%s" % (test, RUN)), "things", "contract-%s-%s" % (test, RUN)


def archive_relay(dbname, cname, rname, extra=()):
    return Relay(RELAY_BIN, dbname, [cname], rname,
                 extra=["--archive-collection", ARCHIVE] + list(extra))


def other_writers_events():
    """What writers in other languages store and the relay publishes (its accepted form)."""
    int32_seq = event(1)
    int32_seq["seq"] = 1  # a Python int: int32
    no_time = event(2)
    del no_time["time"]
    bad_headers = event(3)
    bad_headers["headers"] = {"n": 5, "tenant": "acme", "x": "\ufffe", "replay": "no"}
    not_a_doc = event(4)
    not_a_doc["headers"] = "traceparent"
    return [int32_seq, no_time, bad_headers, not_a_doc, event(5)]


def test_archive_takes_what_the_relay_publishes():
    """Before issue 33 the archive's validator refused (121) an int32 seq, a missing time, a
    non-string header value and headers that are not a document, all of which the relay
    publishes: the entity stayed pending for good and /healthz answered 503. Now each is
    archived, normalised (seq Int64, time only when there is one, only the published
    headers), and cleared."""
    dbname, cname, rname = names("wedge")
    coll = client[dbname][cname]
    ents = Entities(coll)
    port = free_port()
    sub = Subscriber("outbox/%s/#" % cname)
    relay = archive_relay(dbname, cname, rname, ["--metrics-listen", "127.0.0.1:%d" % port])
    try:
        check(relay.wait_log("change stream open"), "relay did not open its stream")
        evs = ents.create("w1", events=other_writers_events())
        check(wait_until(lambda: sub.count() >= 5, 30), "only %d published" % sub.count())
        check(wait_until(lambda: ents.pending() == 0, 30),
              "%d events held pending: %s" % (ents.pending(), relay.log_text()[-2000:]))
        arch = {e["_id"]: e for e in client[dbname][ARCHIVE].find({})}
        check(len(arch) == 5, "archived %d of 5" % len(arch))
        for i, ev in enumerate(evs):
            e = arch[ev["id"]]
            check(isinstance(e["seq"], Int64) and e["seq"] == i + 1, "seq %r" % e["seq"])
            check(("time" in e) == ("time" in ev), "time of seq %d: %s" % (i + 1, e))
        check(arch[evs[2]["id"]]["headers"] == {"tenant": "acme"},
              "published headers only: %s" % arch[evs[2]["id"]].get("headers"))
        check("headers" not in arch[evs[3]["id"]], "headers not a document: left out")
        check(metric(port, "outbox_relay_archive_failing") == 0.0, "archive_failing set")
        check(relay.stop() == 0, "relay did not exit 0")
    finally:
        relay.stop()
        sub.close()


def test_one_event_id_two_entities():
    """Two entities' events with one event id: the second got 11000 on the archive insert,
    counted as already archived and was cleared, in neither its document nor the archive.
    Now the relay sees that the archived entry is another entity's event: it dead-letters
    the second with a reason, and that entity's later events are archived and cleared."""
    dbname, cname, rname = names("collision")
    coll = client[dbname][cname]
    ents = Entities(coll)
    sub = Subscriber("outbox/%s/#" % cname)
    relay = archive_relay(dbname, cname, rname)
    try:
        check(relay.wait_log("change stream open"), "relay did not open its stream")
        shared = str(uuid.uuid4())
        first = event(1)
        first["id"] = shared
        ents.create("a", events=[first])
        check(wait_until(lambda: ents.pending() == 0, 30), "the first event never cleared")
        second = event(1)
        second["id"] = shared
        ents.create("b", events=[second])
        ents.append("b", 1)
        check(wait_until(lambda: ents.pending() == 0, 30),
              "%d events held pending" % ents.pending())
        doc = coll.find_one({"_id": "b"})
        dead = doc.get("deadLetters", [])
        check(len(dead) == 1 and dead[0]["event"]["id"] == shared and
              "another entity's event" in dead[0]["reason"],
              "the second event is not dead-lettered with a reason: %s" % dead)
        arch = client[dbname][ARCHIVE]
        check(arch.find_one({"_id": shared})["entityId"] == "a", "the first entry changed")
        check(arch.count_documents({"entityId": "b"}) == 1, "b's later event not archived")
        check(relay.stop() == 0, "relay did not exit 0")
    finally:
        relay.stop()
        sub.close()


def test_validator_refusal_that_persists():
    """A validator someone else installed refuses one event (121) while it takes the others:
    the relay used to hold that entity pending for good. After three refusals it dead-letters
    the event with the reason, and the entity's later events are archived and cleared. (A
    validator that refuses everything keeps events pending: test_archive.py.)"""
    dbname, cname, rname = names("persist")
    coll = client[dbname][cname]
    ents = Entities(coll)
    relay = archive_relay(dbname, cname, rname)
    try:
        check(relay.wait_log("change stream open"), "relay did not open its stream")
        ents.create("g0", 1)
        check(wait_until(lambda: ents.pending() == 0, 30), "the first event never cleared")
        client[dbname].command("collMod", ARCHIVE,
                               validator={"data.bad": {"$exists": False}})
        ents.create("bad", events=[event(1, data={"bad": 1})])
        n = [0]

        def dead_lettered():
            n[0] += 1
            ents.create("g%d" % n[0], 1)  # the archive keeps taking others meanwhile
            doc = coll.find_one({"_id": "bad"})
            return len(doc.get("deadLetters", [])) == 1
        check(wait_until(dead_lettered, 60, 0.3), "the refused event was never dead-lettered: %s" %
              relay.log_text()[-1500:])
        reason = coll.find_one({"_id": "bad"})["deadLetters"][0]["reason"]
        check("validator refuses" in reason, "reason %r" % reason)
        ents.append("bad", 1)
        check(wait_until(lambda: ents.pending() == 0, 30), "%d pending" % ents.pending())
        arch = client[dbname][ARCHIVE]
        check(arch.count_documents({"entityId": "bad"}) == 1, "the later event not archived")
        check(relay.stop() == 0, "relay did not exit 0")
    finally:
        relay.stop()


class OrderedSubscriber(Subscriber):
    """Keeps user properties as the ordered list of pairs they arrived in."""

    def _on_message(self, client, userdata, msg):
        p = getattr(msg, "properties", None)
        props = list(getattr(p, "UserProperty", []) or []) if p is not None else []
        ctype = getattr(p, "ContentType", None) if p is not None else None
        with self.lock:
            self.messages.append((msg.topic, bytes(msg.payload), props, ctype))


def message_id(m):
    for k, v in m[2]:
        if k == "id" or k == "event-id":
            return v
    return json.loads(m[1])["id"]


def live_and_replayed(test, opts):
    dbname, cname, rname = names(test)
    ents = Entities(client[dbname][cname])
    live = OrderedSubscriber("outbox/%s/#" % cname)
    relay = archive_relay(dbname, cname, rname, opts)
    try:
        check(relay.wait_log("change stream open"), "relay did not open its stream")
        good = event(6)
        good["headers"] = {"traceparent": TP, "tenant": "acme", "X-Request-Id": "r-1"}
        ents.create("r\ufffe/1", events=other_writers_events() + [good])
        check(wait_until(lambda: ents.pending() == 0, 30), "%d pending" % ents.pending())
        check(wait_until(lambda: live.count() >= 6, 10), "%d live messages" % live.count())
        check(relay.stop() == 0, "relay did not exit 0")
    finally:
        relay.stop()
        live.close()
    replayed = OrderedSubscriber("outbox/%s/#" % cname)
    try:
        run = subprocess.run([ADMIN_BIN, "--mongodb-uri", MONGO_URI, "--database", dbname,
                              "--collection", cname, "--archive-collection", ARCHIVE,
                              "--mqtt-uri", MQTT_URI, "replay"] + opts,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
        check(run.returncode == 0, "replay: %s %s" % (run.stdout, run.stderr))
        check(wait_until(lambda: replayed.count() >= 6, 20), "%d replayed" % replayed.count())
    finally:
        replayed.close()
    return live.snapshot(), replayed.snapshot()


def test_replay_equals_live():
    """outbox-admin replay used a renderer of its own (always a time in binary mode, no size
    checks): a replayed message now equals the relay's, byte for byte, except for the marker
    ("replay" : true after "seq" in a structured payload; the user property replay=true last,
    MQTT 5), for structured and binary mode over MQTT 5 and structured over 3.1.1."""
    marker = b', "replay" : true'
    for test, opts in [("v5s", []), ("v5b", ["--payload-mode", "binary"]),
                       ("v311", ["--mqtt-version", "4"])]:
        live, replayed = live_and_replayed(test, opts)
        by_id = {message_id(m): m for m in live}
        check(len(by_id) == 6 and len(replayed) == 6, "%s: %d live, %d replayed" %
              (test, len(by_id), len(replayed)))
        for topic, payload, props, ctype in replayed:
            lt, lp, lprops, lctype = by_id[message_id((topic, payload, props, ctype))]
            check(topic == lt and ctype == lctype, "%s: topic %r/%r" % (test, topic, lt))
            binary = "--payload-mode" in opts
            got = payload if binary else payload.replace(marker, b"", 1)
            check(binary or marker in payload, "%s: no marker in %r" % (test, payload))
            check(got == lp, "%s: payload\n%r\n%r" % (test, payload, lp))
            if "--mqtt-version" in opts:
                check(props == [] and lprops == [], "%s: properties over 3.1.1" % test)
            else:
                check(props == lprops + [("replay", "true")],
                      "%s: properties\n%s\n%s" % (test, props, lprops))


TESTS = [test_archive_takes_what_the_relay_publishes, test_one_event_id_two_entities,
         test_validator_refusal_that_persists, test_replay_equals_live]


if __name__ == "__main__":
    sys.exit(run_tests("relay-archive-contract", TESTS, sys.argv[3:]))
