#!/usr/bin/python3
# Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
"""Consume what outbox-relay publishes (relay/README.md, "The message contract") with
paho-mqtt 1.6 (Debian's python3-paho-mqtt) over MQTT 5, in either payload mode: skip
duplicates by event id (delivery is at least once), notice per-entity gaps by seq, and log
the W3C trace id of the event's traceparent (the request that raised it).

usage: outbox_consumer.py MQTT-URI TOPIC-FILTER CLIENT-ID [PARTITIONS]
e.g. tcp://127.0.0.1:1883 'outbox/things/{partition}/#' things-1 0-15: with PARTITIONS (a set
such as 0-15 or 0,2,4-7) it subscribes to one filter per partition, {partition} replaced, for a
relay publishing to outbox/{collection}/{partition}/{id}; instances on disjoint sets share the
entities, each entity's events going to one instance, in order. It
prints "subscribed", then per message one of
    applied ENTITY SEQ EVENT-ID TYPE in-order|gap|late TRACE-ID|-
    duplicate ENTITY SEQ EVENT-ID
    gap ENTITY missing SEQ..SEQ
and a count on SIGTERM/SIGINT. The session is persistent (clean start off), so messages
published while the consumer is down are delivered when it comes back."""
import json
import base64
import re
import signal
import sys
from urllib.parse import unquote, urlparse

import paho.mqtt.client as mqtt
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

import partitions as partitions_lib  # the partition-set grammar (partitions.py)

seen = set()  # event ids applied; a real service keeps them with its state (outbox/inbox.h)
last_seq = {}  # entity -> highest seq applied
counts = {"applied": 0, "duplicate": 0, "gap": 0}
# W3C traceparent: version-traceid-parentid-flags (a later version may add "-..." fields).
TRACEPARENT = re.compile(r"(?!ff)[0-9a-f]{2}-(?!0{32})([0-9a-f]{32})-(?!0{16})[0-9a-f]{16}-"
                         r"[0-9a-f]{2}(-.*)?")


def trace_id(tp):  # the trace id of a valid traceparent, else "-"
    m = TRACEPARENT.fullmatch(tp) if isinstance(tp, str) else None
    return m.group(1) if m else "-"


def decode(msg):
    """(event id, entity, seq, type, data, trace id) from either payload mode. data is the
    event's document, or bytes for an event whose data is binary (its content type is the
    MQTT 5 content type or the CloudEvents datacontenttype)."""
    props = dict(getattr(msg.properties, "UserProperty", None) or [])
    if "specversion" in props:
        # Binary mode: the CloudEvents attributes are user properties (subject
        # percent-encoded like the topic) and the payload is the event's data; the event's
        # headers, traceparent among them, are user properties too. Payload format
        # indicator 0 (or a content type other than JSON): the data's own bytes.
        ctype = getattr(msg.properties, "ContentType", None) or "application/json"
        text = getattr(msg.properties, "PayloadFormatIndicator", 1) == 1
        data = json.loads(msg.payload) if text and ctype == "application/json" else \
            bytes(msg.payload)
        return (props["id"], unquote(props["subject"]), int(props["seq"]), props["type"],
                data, trace_id(props.get("traceparent")))
    # Structured mode: the payload is a CloudEvents JSON object with the seq extension and
    # the distributed-tracing extension (traceparent, tracestate) when the event has one;
    # binary data comes base64-encoded in data_base64.
    ev = json.loads(msg.payload)
    data = base64.b64decode(ev["data_base64"]) if "data_base64" in ev else ev.get("data")
    return (ev["id"], ev["subject"], int(ev["seq"]), ev["type"], data,
            trace_id(ev.get("traceparent")))


def handle(event_id, entity, seq, etype, data, trace):
    if event_id in seen:
        counts["duplicate"] += 1
        print("duplicate %s %d %s" % (entity, seq, event_id), flush=True)
        return
    last = last_seq.get(entity, 0)
    if seq > last + 1:
        counts["gap"] += 1
        print("gap %s missing %d..%d" % (entity, last + 1, seq - 1), flush=True)
    order = "in-order" if seq == last + 1 else "gap" if seq > last else "late"
    # ... apply `data` to the service's own state here ...
    seen.add(event_id)
    last_seq[entity] = max(last, seq)
    counts["applied"] += 1
    print("applied %s %d %s %s %s %s" % (entity, seq, event_id, etype, order, trace), flush=True)


def on_message(client, userdata, msg):
    try:
        handle(*decode(msg))
    except (ValueError, KeyError, TypeError) as e:  # not a message of the contract
        print("unreadable message on %s: %r" % (msg.topic, e), flush=True)


def main(uri, topic, client_id, partitions=None):
    try:
        subs = [(f, 1) for f in partitions_lib.filters(topic, partitions)]
    except ValueError as e:  # refused before connecting: a bad set would split nothing
        sys.exit("outbox_consumer.py: %s" % e)
    broker = urlparse(uri)
    client = mqtt.Client(client_id=client_id, protocol=mqtt.MQTTv5)
    client.on_message = on_message
    client.on_connect = lambda c, u, flags, rc, props=None: c.subscribe(subs)
    client.on_subscribe = lambda *args: print("subscribed", flush=True)
    connect_props = Properties(PacketTypes.CONNECT)
    connect_props.SessionExpiryInterval = 3600  # keep the session (and its queue) an hour
    client.connect(broker.hostname, broker.port or 1883, clean_start=False,
                   properties=connect_props)
    signal.signal(signal.SIGTERM, lambda *args: client.disconnect())
    try:
        client.loop_forever()  # QoS 1: paho acknowledges after on_message returns
    except KeyboardInterrupt:
        pass
    print("consumer: %(applied)d applied, %(duplicate)d duplicates, %(gap)d gaps" % counts)


if __name__ == "__main__":
    if len(sys.argv) not in (4, 5):
        sys.exit(__doc__)
    main(*sys.argv[1:])
