#!/usr/bin/python3
# Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
"""W3C trace context from an HTTP request to every consumer (issue 27): contacts-service
continues the request's trace (same trace id, a span id of its own, the tracestate kept) on
the events it stores; outbox-relay publishes it; the C contacts-consumer, the Python and the
Node example consumers log the trace id with the event they applied, from the structured
payload (a POST) and from binary mode's user properties (a PUT). A request without a
traceparent starts a new trace.

usage: test-trace.py --relay PATH --service PATH --c-consumer PATH [--node-dir DIR]
OUTBOX_TEST_MONGODB_URI and OUTBOX_TEST_MQTT_URI must be set (tests/fixtures/with-servers).
Without Node.js or its packages the Node consumer is left out, and the test says so."""
import argparse
import os
import subprocess
import sys

import exampletest
import languages_node
from languages_proc import Process

try:
    import pymongo
    from bson import ObjectId
except ImportError:
    print("examples-trace: SKIP: needs pymongo and paho-mqtt (run with /usr/bin/python3)")
    sys.exit(77)

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples")
MONGO = os.environ["OUTBOX_TEST_MONGODB_URI"]
MQTT = os.environ["OUTBOX_TEST_MQTT_URI"]
PID = os.getpid()
PREFIX = os.environ.get("OUTBOX_TEST_DB_PREFIX", "")  # the run's databases (--against)
DB = PREFIX + "trace_%d" % PID
CHECKS = exampletest.Checks("examples-trace")
check = CHECKS.check
TRACE_A, SPAN_A = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
TRACE_B, SPAN_B = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
CONTACT = {"name": {"firstName": "Ada", "lastName": "Lovelace"}, "email": "ada@example.org"}


def start_consumers(args, node_path):
    topic = "outbox/contacts/#"
    consumers = {"C": Process("trace-c-consumer", [
        args.c_consumer, "--mqtt-uri", MQTT, "--mongodb-uri", MONGO,
        "--database", PREFIX + "trace_directory_%d" % PID, "--topic", topic,
        "--client-id", "trace-c-%d" % PID])}
    consumers["Python"] = Process("trace-py-consumer", [
        "/usr/bin/python3", os.path.join(EXAMPLES, "python", "outbox_consumer.py"), MQTT, topic,
        "trace-py-%d" % PID])
    if node_path:
        consumers["Node"] = Process("trace-node-consumer", [
            "node", os.path.join(EXAMPLES, "node", "consumer.js"), MQTT, topic,
            "trace-node-%d" % PID], env=dict(os.environ, NODE_PATH=node_path))
    for name, proc in consumers.items():
        check("%s consumer subscribes" % name, proc.wait_for(
            lambda ls: any(l == "subscribed" or "subscribed to" in l for l in ls)),
            proc.lines()[-3:])
    return consumers


def applied_trace(name, lines, cid, etype):
    """The trace id the consumer logged with the event of @etype applied to @cid."""
    for l in lines:
        f = l.split()
        if name == "C" and l.startswith("consumer: applied %s contact=%s " % (etype, cid)):
            return next((x[6:] for x in f if x.startswith("trace=")), None)
        if name != "C" and len(f) == 7 and f[0] == "applied" and f[1] == cid and f[4] == etype:
            return f[6]
    return None


def check_arrival(consumers, cid, etype, trace):
    for name, proc in consumers.items():
        proc.wait_for(lambda ls: applied_trace(name, ls, cid, etype) is not None)
        got = applied_trace(name, proc.lines(), cid, etype)
        check("%s consumer logs trace %s with %s" % (name, trace, etype), got == trace,
              (got, proc.lines()[-3:]))


def stored_event(coll, cid, etype):
    doc = coll.find_one({"_id": ObjectId(cid)}) or {}
    return next((e for e in doc.get("events", []) if e["type"] == etype), {})


def check_continued(what, headers, trace, incoming_span, tracestate):
    tp = headers.get("traceparent", "")
    parts = tp.split("-")
    check(what + ": the stored traceparent continues the trace with a span of its own",
          len(parts) == 4 and parts[0] == "00" and parts[1] == trace and len(parts[2]) == 16 and
          parts[2] != incoming_span and parts[3] == "01", tp)
    check(what + ": the tracestate goes along", headers.get("tracestate") == tracestate, headers)


def run_relay(args, mode):
    return Process("trace-relay-" + mode, [
        args.relay, "--mongodb-uri", MONGO, "--database", DB, "--collection", "contacts",
        "--mqtt-uri", MQTT, "--name", "trace-%s-%d" % (mode, PID), "--payload-mode", mode,
        "--metrics-listen", "off"])


def scenario(args, node_path):
    coll = pymongo.MongoClient(MONGO)[DB]["contacts"]
    port = exampletest.free_port()
    service = subprocess.Popen([args.service, "--mongodb-uri", MONGO, "--database", DB,
                                "--listen", "127.0.0.1:%d" % port], stderr=subprocess.DEVNULL)
    c = exampletest.Client("http://127.0.0.1:%d" % port)
    check("contacts-service starts", exampletest.wait_healthy(c, service))
    consumers = start_consumers(args, node_path)
    try:
        # Structured mode: a POST in trace A.
        st, h, body = c.call("POST", "/contacts", CONTACT, {
            "traceparent": "00-%s-%s-01" % (TRACE_A, SPAN_A), "tracestate": "rojo=00f067aa"})
        check("POST -> 201", st == 201, (st, body))
        cid = h.get("Location", "").rsplit("/", 1)[-1]
        check_continued("POST", stored_event(coll, cid, "ContactCreated").get("headers", {}),
                        TRACE_A, SPAN_A, "rojo=00f067aa")
        relay = run_relay(args, "structured")
        check_arrival(consumers, cid, "ContactCreated", TRACE_A)
        check("structured relay stops with status 0", relay.stop() == 0, relay.lines()[-3:])
        # Binary mode: a PUT in trace B, with an invalid tracestate (dropped, not stored).
        st, _, body = c.call("PUT", "/contacts/" + cid, dict(CONTACT, email="countess@example.org"),
                             {"If-Match": '"1"', "traceparent": "00-%s-%s-01" % (TRACE_B, SPAN_B),
                              "tracestate": "Not Valid"})
        check("PUT -> 200", st == 200, (st, body))
        check_continued("PUT", stored_event(coll, cid, "ContactEmailUpdated").get("headers", {}),
                        TRACE_B, SPAN_B, None)
        # No traceparent: the service starts a trace; a malformed one is not continued.
        for hdrs in ({}, {"traceparent": "00-%s-%s-01x" % (TRACE_A, SPAN_A)}):
            st, h, _ = c.call("POST", "/contacts", CONTACT, hdrs)
            tp = stored_event(coll, h.get("Location", "").rsplit("/", 1)[-1],
                              "ContactCreated").get("headers", {}).get("traceparent", "")
            check("POST with %s: a new trace" % (hdrs or "no traceparent"),
                  st == 201 and len(tp) == 55 and TRACE_A not in tp and tp.endswith("-00"), tp)
        relay = run_relay(args, "binary")
        check_arrival(consumers, cid, "ContactEmailUpdated", TRACE_B)
        check("binary relay stops with status 0", relay.stop() == 0, relay.lines()[-3:])
    finally:
        for proc in consumers.values():
            proc.stop()
        exampletest.stop(service, 10)


def main():
    parser = argparse.ArgumentParser()
    for opt in ("--relay", "--service", "--c-consumer", "--node-dir"):
        parser.add_argument(opt)
    args = parser.parse_args()
    node_path, why = languages_node.prepare(args.node_dir, EXAMPLES)
    if not node_path:
        print("examples-trace: the Node consumer is left out: %s" % why)
    scenario(args, node_path)
    return CHECKS.summary()


if __name__ == "__main__":
    sys.exit(main())
