#!/usr/bin/python3
# Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
"""outbox-relay end to end: stored event headers reach consumers (issue 27). Every string
header as an MQTT 5 user property in both payload modes, whatever --user-properties says;
traceparent, tracestate and other headers named like CloudEvents attributes in the
structured payload (also over MQTT 3.1.1); headers MQTT cannot carry, or that would pose as
the relay's own properties, left out with a reason and counted, never holding an event up.

usage: test_headers.py OUTBOX_RELAY [TEST_NAME ...]   (run under tests/fixtures/with-servers)
"""

import json
import os
import sys
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from relaytest import db_name  # noqa: E402 (the run's database names)
from relaytest import (MONGO_URI, Entities, Relay, Subscriber, event, free_port,  # noqa: E402
                       metric, pymongo, run_tests, wait_until)

RELAY_BIN = sys.argv[1] if len(sys.argv) > 1 else "outbox-relay"
RUN = "%d" % os.getpid()
client = pymongo.MongoClient(MONGO_URI) if MONGO_URI else None
TP = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
GOOD = {"traceparent": TP, "tracestate": "rojo=00f067aa0ba902b7", "tenant": "acme",
        "X-Request-Id": "r-7"}


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def names(test):
    return db_name("relay_headers_%s_%s" % (test, RUN)), "things_%s" % RUN, "relay-h-%s-%s" % (test, RUN)


def with_headers(seq, headers):
    ev = event(seq)
    ev["headers"] = headers
    return ev


def cleared(coll):
    return wait_until(lambda: all(len(d.get("events", [])) == 0
                                  for d in coll.find({}, {"events": 1})), 30)


def run_relay(test, args, events, mqtt_version=5):
    """Stores @events on one entity, runs a relay with @args until they are published and
    cleared; returns (messages in seq order, the relay's log, headers_dropped_total)."""
    dbname, cname, rname = names(test)
    coll = client[dbname][cname]
    sub = Subscriber("outbox/%s/#" % cname)
    port = free_port()
    relay = Relay(RELAY_BIN, dbname, [cname], rname,
                  list(args) + ["--metrics-listen", "127.0.0.1:%d" % port])
    try:
        check(relay.wait_log("change stream open"), "relay did not open its stream")
        Entities(coll).create("h1", events=events)
        check(wait_until(lambda: sub.count() >= len(events), 30),
              "%s: %d of %d messages arrived" % (test, sub.count(), len(events)))
        check(cleared(coll), "%s: events not cleared" % test)
        dropped = metric(port, "outbox_relay_headers_dropped_total")
        check(relay.stop() == 0, "relay did not exit 0")
        return sub.snapshot(), relay.log_text(), dropped
    finally:
        relay.stop()
        sub.close()


def user_props(props):
    return {k: v for k, v in props.items() if not k.startswith("$")}


def test_structured_mode():
    """MQTT 5 structured mode: every good header as a user property beside the relay's own;
    the attribute-named ones in the payload; forged, non-string and malformed ones left
    out with a reason, and the event still published."""
    bad = dict(GOOD, **{"event-id": "forged", "Type": "forged", "n": 5})
    msgs, log, dropped = run_relay("structured", [], [
        with_headers(1, GOOD), with_headers(2, bad), with_headers(3, "not a document"),
        with_headers(4, {"traceparent": "00-not-a-trace", "tenant": "acme"})])
    check(len(msgs) == 4, "messages: %d" % len(msgs))
    ces = [json.loads(p.decode("utf-8")) for _, p, _ in msgs]
    for (_, _, props), ce in zip(msgs, ces):
        got = user_props(props)
        check(got["event-id"] == ce["id"] and got["seq"] == str(ce["seq"]),
              "the relay's own properties were overwritten: %s" % got)
        check("Type" not in got and "n" not in got, "bad header published: %s" % got)
        check("datacontenttype" not in ce or ce["datacontenttype"] == "application/json", ce)
    for seq in (1, 2):
        got, ce = user_props(msgs[seq - 1][2]), ces[seq - 1]
        for k, v in GOOD.items():
            check(got.get(k) == v, "seq %d: user property %s = %r" % (seq, k, got.get(k)))
        check(ce.get("traceparent") == TP and ce.get("tracestate") == GOOD["tracestate"] and
              ce.get("tenant") == "acme", "seq %d: attributes missing: %s" % (seq, ce))
        check("X-Request-Id" not in ce, "not a CloudEvents attribute name: %s" % ce)
    check(not any(k in user_props(msgs[2][2]) for k in GOOD), "seq 3 carried headers")
    check("traceparent" not in ces[3] and user_props(msgs[3][2]).get("tenant") == "acme" and
          ces[3].get("tenant") == "acme", "seq 4: %s %s" % (msgs[3][2], ces[3]))
    check(dropped == 5, "outbox_relay_headers_dropped_total = %s, expected 5" % dropped)
    for reason in ("reserved by the relay", "headers is not a document",
                   "not W3C Trace Context"):
        check(reason in log, "the log does not say %r" % reason)


def test_binary_mode_and_no_user_properties():
    """Binary mode: headers are user properties after the CloudEvents attributes, also with
    --user-properties none (which chooses among the relay's own four only)."""
    msgs, _, dropped = run_relay("binary", ["--payload-mode", "binary", "--user-properties",
                                            "none"], [with_headers(1, GOOD)])
    got = user_props(msgs[0][2])
    for k, v in GOOD.items():
        check(got.get(k) == v, "binary mode: user property %s = %r" % (k, got.get(k)))
    check(got.get("specversion") == "1.0" and "event-id" not in got, "binary props %s" % got)
    check(json.loads(msgs[0][1].decode("utf-8")) == {"n": 1}, "binary payload %r" % msgs[0][1])
    check(dropped == 0, "dropped %s" % dropped)
    msgs, _, _ = run_relay("none", ["--user-properties", "none"], [with_headers(1, GOOD)])
    check(user_props(msgs[0][2]) == GOOD, "--user-properties none: %s" % msgs[0][2])


def test_mqtt311_payload_carries_the_attributes():
    """MQTT 3.1.1 has no user properties: the structured payload still carries traceparent,
    tracestate and the other attribute-named headers."""
    msgs, _, _ = run_relay("v311", ["--mqtt-version", "4"], [with_headers(1, GOOD)])
    ce = json.loads(msgs[0][1].decode("utf-8"))
    check(ce.get("traceparent") == TP and ce.get("tracestate") == GOOD["tracestate"] and
          ce.get("tenant") == "acme", "3.1.1 payload: %s" % ce)


def test_text_mqtt_may_refuse_and_forged_replay():
    """Issue 33: non-characters (U+FFFE, U+FFFF, U+FDD0) and controls are valid UTF-8 that
    MQTT 5 section 1.5.4 lets a receiver refuse, and mosquitto drops the connection on them.
    In an entity id they are percent-encoded in the topic and entity-id; in a header written
    by another client the header is left out (counted, with the reason); a header named
    "replay" (any case) cannot forge the replay marker. The connection never drops."""
    dbname, cname, rname = names("text")
    coll = client[dbname][cname]
    sub = Subscriber("outbox/%s/#" % cname)
    port = free_port()
    relay = Relay(RELAY_BIN, dbname, [cname], rname,
                  ["--metrics-listen", "127.0.0.1:%d" % port])
    try:
        check(relay.wait_log("change stream open"), "relay did not open its stream")
        ents = Entities(coll)
        bad = {"n": "v\uffff", "\ufdd0k": "v", "replay": "false", "Replay": "true",
               "good": "yes"}
        ents.create("a\ufffeb", events=[with_headers(1, bad), event(2)])
        ents.create("c\x01d\U0010ffff", events=[event(1)])
        check(wait_until(lambda: sub.count() >= 3, 30), "%d of 3 messages" % sub.count())
        check(cleared(coll), "events not cleared")
        msgs = sub.snapshot()
        topics = sorted(t for t, _, _ in msgs)
        check(topics == sorted(["outbox/%s/a%%EF%%BF%%BEb" % cname] * 2 +
                               ["outbox/%s/c%%01d%%F4%%8F%%BF%%BF" % cname]), topics)
        for _, payload, props in msgs:
            got, ce = user_props(props), json.loads(payload.decode("utf-8"))
            check(not any(k.lower() == "replay" for k in got), "forged marker: %s" % got)
            check("replay" not in ce, "forged marker in the payload: %s" % ce)
        first = [m for m in msgs if json.loads(m[1].decode("utf-8"))["seq"] == 1 and
                 "a%EF" in m[0]][0]
        check(user_props(first[2]).get("good") == "yes", "good header lost: %s" % first[2])
        check(json.loads(first[1].decode("utf-8"))["subject"] == "a\ufffeb", first[1])
        dropped = metric(port, "outbox_relay_headers_dropped_total")
        check(dropped == 4, "outbox_relay_headers_dropped_total = %s, expected 4" % dropped)
        text = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=5).read()
        by_rule = [line.rsplit(" ", 1)[1] for line in text.decode().splitlines() if
                   line.startswith('outbox_relay_headers_dropped_by_rule_total{rule="reserved '
                                   'name"} ')]
        check(by_rule == ["2"], "dropped by rule 'reserved name': %s" % by_rule)
        reconnects = metric(port, "outbox_relay_mqtt_reconnects_total")
        check(reconnects == 0, "the broker dropped the connection %s times" % reconnects)
        check(relay.stop() == 0, "relay did not exit 0")
        log = relay.log_text()
        check("4 header(s) left out" in log and "2: header name is reserved" in log and
              "MQTT text" in log, "the log does not name every reason: %s" % log[-2000:])
    finally:
        relay.stop()
        sub.close()


TESTS = [test_structured_mode, test_binary_mode_and_no_user_properties,
         test_mqtt311_payload_carries_the_attributes, test_text_mqtt_may_refuse_and_forged_replay]


if __name__ == "__main__":
    sys.exit(run_tests("relay-headers", TESTS, sys.argv[2:]))
