#!/usr/bin/python3
# Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
"""MQTT 5 message properties and pacing (issue 38): message expiry (--message-expiry and an
event's own expiresAt, --expired-events drop / dead-letter / publish, MQTT 3.1.1's notice),
checked with a persistent mosquitto subscriber that comes back after or before the expiry;
the payload format indicator; --max-publish-rate holding events back while clears go on.
Each test starts its own mosquitto; MongoDB is the fixture's (or a real replica set).

usage: test_mqtt5.py OUTBOX_RELAY [TEST_NAME ...]   (run under tests/fixtures/with-servers)
"""

import datetime
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "fixtures"))
from tcpproxy import Proxy  # noqa: E402
from relaytest import db_name  # noqa: E402 (the run's database names)
from relaytest import (MONGO_URI, Broker, Int64, Relay, Subscriber, event,  # noqa: E402
                       free_port, metric, pymongo, run_tests, wait_until)

RELAY_BIN = sys.argv[1] if len(sys.argv) > 1 else "outbox-relay"
RUN = "%d" % os.getpid()
client = pymongo.MongoClient(MONGO_URI) if MONGO_URI else None


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def names(test):
    return db_name("relay_mqtt5_%s_%s" % (test, RUN)), "things", "mqtt5-%s-%s" % (test, RUN)


def utcnow():
    return datetime.datetime.utcnow()


def expiring(seq, seconds):
    """An event whose expiresAt is @seconds from now (negative: already past)."""
    ev = event(seq)
    ev["expiresAt"] = (utcnow() + datetime.timedelta(seconds=seconds)).replace(
        microsecond=(utcnow().microsecond // 1000) * 1000)
    return ev


def by_id(sub):
    return {json.loads(pl)["id"]: props for _, pl, props in sub.snapshot()}


def cleared(coll, eid, timeout=20):
    return wait_until(lambda: not coll.find_one({"_id": eid})["events"], timeout)


def test_persistent_subscriber_after_and_before_expiry():
    """A persistent subscriber away while the relay publishes: an event with --message-expiry
    2s is gone when it comes back 4 s later (mosquitto dropped it), one whose expiresAt is a
    minute away arrives with the time left as its Message Expiry Interval. A subscriber that
    stayed gets both, the first with interval 2."""
    dbname, cname, rname = names("persist")
    coll = client[dbname][cname]
    broker = Broker("mqtt5-persist")
    cid = "persist-%s" % RUN
    away = Subscriber("outbox/%s/#" % cname, client_id=cid, clean=False, uri=broker.uri)
    away.close()
    stayed = Subscriber("outbox/%s/#" % cname, uri=broker.uri)
    relay = Relay(RELAY_BIN, dbname, [cname], rname, ["--message-expiry", "2s"],
                  mqtt_uri=broker.uri)
    try:
        short, long_ = event(1), expiring(2, 60)
        coll.insert_one({"_id": "p", "version": Int64(1), "eventSeq": Int64(2),
                         "events": [short, long_]})
        check(cleared(coll, "p"), "not published:\n" + relay.log_text()[-2000:])
        check(wait_until(lambda: stayed.count() >= 2, 10), "the online subscriber got %d" %
              stayed.count())
        online = by_id(stayed)
        check(online[short["id"]]["$expiry"] == 2, "interval %s" % online[short["id"]])
        check(55 <= online[long_["id"]]["$expiry"] <= 60, "interval %s" % online[long_["id"]])
        published = time.time()
        time.sleep(max(0.0, published + 4 - time.time()))  # the 2 s expiry passes
        back = Subscriber("outbox/%s/#" % cname, client_id=cid, clean=False, uri=broker.uri)
        try:
            check(wait_until(lambda: back.count() >= 1, 10), "nothing delivered on return")
            time.sleep(0.5)  # anything else queued would have arrived with it
            got = by_id(back)
            check(list(got) == [long_["id"]], "delivered on return: %s (want only %s)" % (
                list(got), long_["id"]))
            left = got[long_["id"]]["$expiry"]
            check(50 <= left <= 57, "the remaining interval on return is %s" % left)
        finally:
            back.close()
    finally:
        relay.stop()
        stayed.close()
        broker.close()


def expired_scenario(test, extra, version=5):
    """One event expired a second ago between two live ones; returns the document, what was
    delivered (id -> properties), the relay's log and its expired-events counter."""
    dbname, cname, rname = names(test)
    coll = client[dbname][cname]
    broker = Broker("mqtt5-" + test)
    sub = Subscriber("outbox/%s/#" % cname, uri=broker.uri)
    port = free_port()
    relay = Relay(RELAY_BIN, dbname, [cname], rname,
                  ["--metrics-listen", "127.0.0.1:%d" % port, "--mqtt-version", str(version)] +
                  list(extra), mqtt_uri=broker.uri)
    try:
        evs = [event(1), expiring(2, -1), event(3)]
        coll.insert_one({"_id": "x", "version": Int64(1), "eventSeq": Int64(3), "events": evs})
        check(cleared(coll, "x"), "events still pending:\n" + relay.log_text()[-2000:])
        want = 3 if "publish" in extra else 2
        check(wait_until(lambda: sub.count() >= want, 10), "delivered %d" % sub.count())
        time.sleep(0.3)
        expired = metric(port, "outbox_relay_events_expired_total")
        return evs, coll.find_one({"_id": "x"}), by_id(sub), relay.log_text(), expired, dbname
    finally:
        relay.stop()
        sub.close()
        broker.close()


def test_expired_events_drop_by_default_and_archive():
    evs, doc, got, log, expired, dbname = expired_scenario(
        "drop", ["--archive-collection", "archive_mqtt5"])
    check(list(got) == [evs[0]["id"], evs[2]["id"]], "delivered %s" % list(got))
    check(not doc.get("deadLetters"), "dead-lettered: %s" % doc.get("deadLetters"))
    check(expired == 1, "outbox_relay_events_expired_total = %s" % expired)
    check("expired" in log and "cleared without publishing" in log, log[-2000:])
    arch = client[dbname]["archive_mqtt5"]
    check(wait_until(lambda: arch.count_documents({}) == 3, 10),
          "archived %d of 3" % arch.count_documents({}))
    check(arch.count_documents({"_id": evs[1]["id"], "expiresAt": {"$exists": True}}) == 1,
          "the expired event is not "
          "in the archive with its expiresAt: %s" % list(arch.find())[:3])
    # outbox-admin replay skips it too (and would send the time left of a live one).
    import subprocess
    broker = Broker("mqtt5-replay")
    try:
        run = subprocess.run(
            [os.path.join(os.path.dirname(RELAY_BIN), "outbox-admin"), "--mongodb-uri", MONGO_URI,
             "--database", dbname, "--collection", "things", "--archive-collection",
             "archive_mqtt5", "--mqtt-uri", broker.uri, "replay", "--since",
             "2000-01-01T00:00:00Z", "--json"], capture_output=True, text=True, timeout=60)
        out = json.loads(run.stdout or "{}")
        check(run.returncode == 0 and out.get("replayed") == 2 and out.get("expired") == 1,
              "replay: %s %s" % (run.stdout, run.stderr))
    finally:
        broker.close()


def test_expired_events_dead_letter():
    evs, doc, got, log, expired, _ = expired_scenario(
        "dead", ["--expired-events", "dead-letter"])
    check(list(got) == [evs[0]["id"], evs[2]["id"]], "delivered %s" % list(got))
    dead = doc.get("deadLetters", [])
    check(len(dead) == 1 and dead[0]["event"]["id"] == evs[1]["id"] and
          "expired" in dead[0]["reason"], "dead letters %s" % dead)
    check(expired == 1, "counter %s" % expired)


def test_expired_events_publish():
    evs, doc, got, log, expired, _ = expired_scenario("pub", ["--expired-events", "publish"])
    check(sorted(got) == sorted(e["id"] for e in evs), "delivered %s" % list(got))
    check(got[evs[1]["id"]]["$expiry"] is None, "an expired event sent with an interval")
    check(not expired, "counter %s" % expired)


def test_mqtt311_says_expiry_cannot_be_sent():
    evs, doc, got, log, expired, _ = expired_scenario("v4", ["--message-expiry", "1h"], 4)
    check("MQTT 3.1.1 (mqtt-version 4) cannot send a message expiry: message-expiry is not sent"
          in log, log[-2000:])
    check(list(got) == [evs[0]["id"], evs[2]["id"]] and expired == 1, "delivered %s" % list(got))


def test_expires_at_not_a_date_is_dead_lettered():
    dbname, cname, rname = names("baddate")
    coll = client[dbname][cname]
    broker = Broker("mqtt5-baddate")
    relay = Relay(RELAY_BIN, dbname, [cname], rname, [], mqtt_uri=broker.uri)
    try:
        bad = event(1)
        bad["expiresAt"] = "tomorrow"
        coll.insert_one({"_id": "b", "version": Int64(1), "eventSeq": Int64(1), "events": [bad]})
        check(cleared(coll, "b"), relay.log_text()[-2000:])
        dead = coll.find_one({"_id": "b"}).get("deadLetters", [])
        check(len(dead) == 1 and dead[0]["reason"] == "event expiresAt is not a date", dead)
    finally:
        relay.stop()
        broker.close()


def test_payload_format_indicator():
    """JSON payloads say so: payload format indicator 1 with their content type."""
    dbname, cname, rname = names("pfi")
    coll = client[dbname][cname]
    broker = Broker("mqtt5-pfi")
    sub = Subscriber("outbox/%s/#" % cname, uri=broker.uri)
    relay = Relay(RELAY_BIN, dbname, [cname], rname, [], mqtt_uri=broker.uri)
    try:
        coll.insert_one({"_id": "f", "version": Int64(1), "eventSeq": Int64(1),
                         "events": [event(1)]})
        check(wait_until(lambda: sub.count() >= 1, 20), relay.log_text()[-2000:])
        props = sub.snapshot()[0][2]
        check(props["$payload-format"] == 1 and
              props["$content-type"] == "application/cloudevents+json", props)
        check(props["$expiry"] is None, "an expiry without --message-expiry: %s" % props)
    finally:
        relay.stop()
        sub.close()
        broker.close()


def test_max_publish_rate_holds_events_not_clears():
    """--max-publish-rate 50: 100 events take about 2 s (not the ~0.1 s they take unpaced),
    the gauge shows the limit, and what was published is cleared meanwhile (clears are not
    held back with the events)."""
    dbname, cname, rname = names("rate")
    coll = client[dbname][cname]
    broker = Broker("mqtt5-rate")
    sub = Subscriber("outbox/%s/#" % cname, uri=broker.uri)
    port = free_port()
    relay = Relay(RELAY_BIN, dbname, [cname], rname,
                  ["--max-publish-rate", "50", "--metrics-listen", "127.0.0.1:%d" % port],
                  mqtt_uri=broker.uri)
    try:
        check(relay.wait_log("mqtt: connected to"), relay.log_text()[-2000:])
        check(wait_until(lambda: metric(port, "outbox_relay_publish_rate_limit") == 50, 10),
              "gauge %s" % metric(port, "outbox_relay_publish_rate_limit"))
        coll.insert_many([{"_id": "r%d" % i, "version": Int64(1), "eventSeq": Int64(1),
                           "events": [event(1)]} for i in range(100)])
        # Timed from the first delivery: the pacing, not how long the stream took to bring
        # the inserts (through mongos a merged stream holds changes for up to a shard's
        # no-op interval: 3.56 s from the insert once, against an outside mongos).
        check(wait_until(lambda: sub.count() >= 1, 10, 0.01), "nothing delivered")
        start = time.time()
        check(wait_until(lambda: sub.count() >= 20, 10), "only %d" % sub.count())
        # Mid-way: some delivered and cleared, the rest pending, and the limit holding them.
        pending = coll.count_documents({"events.0": {"$exists": True}})
        paced = metric(port, "outbox_relay_publish_paced")
        check(0 < pending < 100, "pending %d mid-way" % pending)
        check(wait_until(lambda: coll.count_documents({"events.0": {"$exists": True}}) <=
                         100 - sub.count() + 20, 5), "published events are not cleared")
        check(wait_until(lambda: sub.count() >= 100, 20), "only %d" % sub.count())
        took = time.time() - start
        check(1.4 <= took <= 3.5, "100 events at 50/s took %.2f s" % took)
        check(paced == 1, "outbox_relay_publish_paced = %s mid-way" % paced)
    finally:
        relay.stop()
        sub.close()
        broker.close()


def test_binary_data():
    """Binary data (BSON binData) with its contentType: binary mode publishes the bytes as they
    are, with the content type and payload format indicator 0 (application/octet-stream
    without a contentType); structured mode puts them in data_base64 with datacontenttype;
    a document's data stays JSON with indicator 1."""
    import base64
    from bson.binary import Binary
    png = b"\x89PNG\r\n\x1a\n\x00\xff\xfe binary"
    for mode in ("binary", "structured"):
        dbname, cname, rname = names("bin" + mode)
        coll = client[dbname][cname]
        broker = Broker("mqtt5-bin" + mode)
        sub = Subscriber("outbox/%s/#" % cname, uri=broker.uri)
        # The Python example consumer reads both payload modes (examples/python).
        import subprocess
        consumer = subprocess.Popen(
            ["/usr/bin/python3", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                              "..", "..", "examples", "python",
                                              "outbox_consumer.py"),
             broker.uri, "outbox/%s/#" % cname, "bin-consumer-%s-%s" % (mode, RUN)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        lines = []
        threading_ = __import__("threading")
        threading_.Thread(target=lambda: [lines.append(l) for l in consumer.stdout],
                          daemon=True).start()
        check(wait_until(lambda: "subscribed\n" in lines, 10), "consumer: %s" % lines)
        relay = Relay(RELAY_BIN, dbname, [cname], rname,
                      ["--payload-mode", mode, "--archive-collection", "archive_bin"],
                      mqtt_uri=broker.uri)
        try:
            img, raw, doc = event(1), event(2), event(3)
            img["data"], img["contentType"] = Binary(png), "image/png"
            raw["data"] = Binary(b"")
            coll.insert_one({"_id": "b", "version": Int64(1), "eventSeq": Int64(3),
                             "events": [img, raw, doc]})
            check(wait_until(lambda: sub.count() >= 3, 20), "%s: delivered %d:\n%s" % (
                mode, sub.count(), relay.log_text()[-2000:]))
            msgs = sub.snapshot()
            check(not coll.find_one({"_id": "b"}).get("deadLetters"), "dead-lettered")
            if mode == "binary":
                (_, p1, h1), (_, p2, h2), (_, p3, h3) = msgs
                check(p1 == png and h1["$content-type"] == "image/png" and
                      h1["$payload-format"] == 0, (p1, h1))
                check(p2 == b"" and h2["$content-type"] == "application/octet-stream" and
                      h2["$payload-format"] == 0, (p2, h2))
                check(json.loads(p3) == {"n": 3} and h3["$content-type"] == "application/json"
                      and h3["$payload-format"] == 1, (p3, h3))
            else:
                ces = [(json.loads(pl), h) for _, pl, h in msgs]
                (c1, h1), (c2, _), (c3, _) = ces
                check(base64.b64decode(c1["data_base64"]) == png and "data" not in c1 and
                      c1["datacontenttype"] == "image/png" and h1["$payload-format"] == 1, c1)
                check(c2["data_base64"] == "" and
                      c2["datacontenttype"] == "application/octet-stream", c2)
                check(c3["data"] == {"n": 3} and c3["datacontenttype"] == "application/json", c3)
            check(wait_until(lambda: sum(l.startswith("applied") for l in lines) >= 3, 10),
                  "%s: the Python consumer: %s" % (mode, lines[-5:]))
            check(not any("unreadable" in l for l in lines), lines)
            # outbox-admin replay renders the archived bytes the same way.
            check(wait_until(lambda: client[dbname]["archive_bin"].count_documents({}) == 3, 10),
                  "not archived")
            again = Subscriber("replay/#", uri=broker.uri)
            try:
                run = subprocess.run(
                    [os.path.join(os.path.dirname(RELAY_BIN), "outbox-admin"), "--mongodb-uri",
                     MONGO_URI, "--database", dbname, "--collection", cname,
                     "--archive-collection", "archive_bin", "--mqtt-uri", broker.uri,
                     "--payload-mode", mode, "--topic", "replay/{collection}/{id}", "replay",
                     "--since", "2000-01-01T00:00:00Z"], capture_output=True, text=True,
                    timeout=60)
                check(run.returncode == 0 and wait_until(lambda: again.count() >= 3, 10),
                      "replay: %s %s" % (run.stdout, run.stderr))
                first = again.snapshot()[0]
                if mode == "binary":
                    check(first[1] == png and first[2]["$content-type"] == "image/png" and
                          first[2]["$payload-format"] == 0, first)
                else:
                    check(base64.b64decode(json.loads(first[1])["data_base64"]) == png, first)
            finally:
                again.close()
        finally:
            consumer.terminate()
            consumer.wait(10)
            relay.stop()
            sub.close()
            broker.close()


def alias_run(test, aliases, entities, per_entity, restart=False):
    """@entities entities with @per_entity events each, published through a tapping proxy
    (default topic shape), with or without --topic-aliases; with @restart mosquitto restarts
    (same port) while the relay publishes. Returns (PUBLISH packets, delivered topic per
    event id, the document's dead letters)."""
    dbname, cname, rname = names(test)
    coll = client[dbname][cname]
    broker = Broker("mqtt5-" + test, extra="max_queued_messages 0\n")
    proxy = Proxy("127.0.0.1", broker.port, mqtt=True)
    sub = Subscriber("outbox/%s/#" % cname, uri=broker.uri)
    relay = Relay(RELAY_BIN, dbname, [cname], rname,
                  (["--topic-aliases"] if aliases else []) +
                  # Paced, so the restart comes while it publishes.
                  (["--max-publish-rate", "400"] if restart else []),
                  mqtt_uri="tcp://127.0.0.1:%d" % proxy.port)
    total = entities * per_entity
    try:
        check(relay.wait_log("mqtt: connected to"), relay.log_text()[-2000:])
        start = time.time()
        coll.insert_many([{"_id": "a%03d" % i, "version": Int64(1),
                           "eventSeq": Int64(per_entity),
                           "events": [event(s) for s in range(1, per_entity + 1)]}
                          for i in range(entities)])
        if restart:
            check(wait_until(lambda: sub.count() >= total // 4, 20), "nothing before restart")
            broker.proc.terminate()
            broker.proc.wait(10)
            sub.close()
            import subprocess
            binary = "/usr/sbin/mosquitto" if os.path.exists("/usr/sbin/mosquitto") else "mosquitto"
            broker.proc = subprocess.Popen([binary, "-c", broker.conf], stdout=broker.log,
                                           stderr=broker.log)
            check(wait_until(broker._listening, 10), "mosquitto did not restart")
            alias_run.restarted_at = time.time()
            sub = Subscriber("outbox/%s/#" % cname, uri=broker.uri)
        check(wait_until(lambda: coll.count_documents({"events.0": {"$exists": True}}) == 0, 60),
              "pending left:\n" + relay.log_text()[-2000:])
        if not restart:
            check(wait_until(lambda: sub.count() >= total, 20), "delivered %d of %d" % (
                sub.count(), total))
        topics = {json.loads(pl)["id"]: t for t, pl, _ in sub.snapshot()}
        dead = [d for doc in coll.find() for d in doc.get("deadLetters", [])]
        return proxy.publishes_since(start), topics, dead
    finally:
        relay.stop()
        sub.close()
        proxy.close()
        broker.close()


def test_topic_aliases():
    """--topic-aliases against mosquitto (Topic Alias Maximum 10): subscribers get every event
    on its full topic; the wire carries a topic's name once per alias, then 2 bytes. Figures:
    bytes per PUBLISH without and with, for entities whose events come in a row (10 entities, as
    many as aliases) and interleaved (100 entities: the aliases are reassigned all the time)."""
    figures = []
    for entities, per in ((10, 20), (100, 4)):
        runs = {}
        for aliases in (False, True):
            pubs, topics, dead = alias_run("alias%d%d" % (entities, aliases), aliases, entities, per)
            check(len(topics) == entities * per and not dead, "delivered %d, dead %s" % (
                len(topics), dead))
            check(all(t.startswith("outbox/things/a") for t in topics.values()),
                  "a topic lost: %s" % sorted(set(topics.values()))[:3])
            aliased = [p for p in pubs if p.alias]
            check(bool(aliased) == aliases, "%d publishes with an alias" % len(aliased))
            if aliases:
                check(all(p.alias <= 10 for p in aliased), "alias above the broker's maximum")
                # Interleaved over more entities than aliases, LRU reassigns them before reuse.
                check(entities > 10 or any(p.topic == "" for p in aliased), "no publish used a known alias: %s" % [
                    (p.topic, p.alias) for p in aliased[:30]])
            runs[aliases] = sum(p.size for p in pubs) / len(pubs)
        figures.append("%d entities x %d events: %.1f -> %.1f bytes per PUBLISH (%+.1f%%)" % (
            entities, per, runs[False], runs[True], (runs[True] - runs[False]) / runs[False] * 100))
    print("  topic aliases, default topic outbox/{collection}/{id}: " + "; ".join(figures),
          flush=True)


def test_topic_aliases_across_a_broker_restart():
    """Aliases belong to a connection: after mosquitto restarts the relay defines them again
    (a publish with an alias the new connection does not know would be a protocol error):
    nothing dead-lettered, nothing left pending."""
    pubs, topics, dead = alias_run("aliasrestart", True, 8, 200, restart=True)
    check(not dead, "dead letters: %s" % dead)
    after = [p for p in pubs if p.time >= alias_run.restarted_at]
    check(any(p.topic == "" for p in after) and any(p.topic and p.alias for p in after),
          "aliases not defined again and used after the restart (%d publishes after it)" %
          len(after))


TESTS = [test_persistent_subscriber_after_and_before_expiry,
         test_expired_events_drop_by_default_and_archive, test_expired_events_dead_letter,
         test_expired_events_publish, test_mqtt311_says_expiry_cannot_be_sent,
         test_expires_at_not_a_date_is_dead_lettered, test_payload_format_indicator,
         test_max_publish_rate_holds_events_not_clears, test_binary_data, test_topic_aliases,
         test_topic_aliases_across_a_broker_restart]


def main():
    return run_tests("relay-mqtt5", TESTS, sys.argv[2:])


if __name__ == "__main__":
    sys.exit(main())
