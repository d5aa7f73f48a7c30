#!/usr/bin/python3
# Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
"""Commit a change and its events in ONE MongoDB write, exactly as liboutbox does (THE STORED
CONTRACT in lib/include/outbox/collection.h), with pymongo 3.11 (Debian's python3-pymongo).

    create(coll, "c-42", {"name": "Ada"}, [("contact.created", {"name": "Ada"})])   # version 1
    update(coll, "c-42", 1, {"email": "ada@example.org"},
           [("contact.email-changed", {"email": "ada@example.org"})])             # version 2

As a program: outbox_writer.py URI DB COLLECTION ENTITIES CHANGES creates ENTITIES entities,
changes each CHANGES times, and prints "committed ENTITY SEQ EVENT-ID" per event."""
import datetime
import re
import sys
import uuid

from bson.int64 import Int64
from pymongo import MongoClient, WriteConcern

RESERVED = {"_id", "version", "eventSeq", "events"}
EVENT_TYPE = re.compile(r"[A-Za-z0-9._-]{1,128}\Z")


class Conflict(Exception):
    """The entity is not at the expected version: someone else changed it. Re-read it, decide
    again, retry (HTTP 412 in a REST service)."""


def check(fields, specs):
    """What liboutbox refuses before writing: bookkeeping fields among the business fields,
    event types outside 1..128 of [A-Za-z0-9._-] (the relay would dead-letter them)."""
    if RESERVED & set(fields):
        raise ValueError("business fields may not set %s" % sorted(RESERVED & set(fields)))
    for etype, *rest in specs:
        if not EVENT_TYPE.match(etype):
            raise ValueError("event type %r is not 1..128 of [A-Za-z0-9._-]" % etype)
        expires = rest[1].get("expires_at") if len(rest) > 1 else None
        if expires is not None and not isinstance(expires, datetime.datetime):
            raise ValueError("expires_at must be a datetime, got %r" % (expires,))


def stored_events(specs, first_seq):
    """The events as stored: id a UUID v4 string, seq an Int64 (a small Python int would be
    stored as int32), type, time a UTC date (the same for the whole commit), data a document
    whose keys do not start with '$'. A spec may carry options as a third element:
    {"expires_at": datetime} stores expiresAt (outbox-relay sends the time left as the MQTT 5
    Message Expiry Interval and does not publish the event after it)."""
    now = datetime.datetime.now(datetime.timezone.utc)
    events = []
    for i, (etype, data, *opts) in enumerate(specs):
        ev = {"id": str(uuid.uuid4()), "seq": Int64(first_seq + i), "type": etype, "time": now,
              "data": data}
        if opts and opts[0].get("expires_at") is not None:
            ev["expiresAt"] = opts[0]["expires_at"]
        events.append(ev)
    return events


def create(coll, entity_id, fields, specs):
    """Inserts the entity at version 1 with its first events; pymongo raises
    DuplicateKeyError if it exists. Returns the stored events."""
    check(fields, specs)
    events = stored_events(specs, 1)
    coll.insert_one(dict(fields, _id=entity_id, version=Int64(1),
                         eventSeq=Int64(len(events)), events=events))
    return events


def update(coll, entity_id, expected_version, set_fields, specs):
    """One update_one: the filter holds _id, the expected version and the eventSeq read; $set
    the business fields, version + 1 and eventSeq + n; $push the events. Returns (new version,
    events). Raises Conflict (nothing written) or KeyError (no such entity)."""
    check(set_fields, specs)
    current = coll.find_one({"_id": entity_id}, {"version": 1, "eventSeq": 1})
    if current is None:
        raise KeyError(entity_id)
    if current["version"] != expected_version:
        raise Conflict("entity is at version %d, expected %d" % (current["version"],
                                                                   expected_version))
    seq = current["eventSeq"]
    events = stored_events(specs, seq + 1)
    change = {"$set": dict(set_fields, version=Int64(expected_version + 1))}
    if events:  # as liboutbox: a change without events leaves eventSeq and events alone
        change["$set"]["eventSeq"] = Int64(seq + len(events))
        change["$push"] = {"events": {"$each": events}}
    result = coll.update_one(
        {"_id": entity_id, "version": Int64(expected_version), "eventSeq": Int64(seq)}, change)
    if result.matched_count == 0:  # changed between our read and our write
        raise Conflict("entity changed concurrently")
    return expected_version + 1, events


def main(uri, db, collection, entities, changes):
    # w: majority as liboutbox: an acknowledged commit survives a primary failover.
    coll = MongoClient(uri)[db].get_collection(collection, write_concern=WriteConcern("majority"))
    for e in range(int(entities)):
        entity = "py-%d" % e
        committed, version = create(coll, entity, {"changes": 0}, [("thing.created", {})]), 1
        for c in range(int(changes)):
            specs = [("thing.changed", {"change": c, "part": k}) for k in range(1 + c % 2)]
            version, events = update(coll, entity, version, {"changes": c + 1}, specs)
            committed += events
        for ev in committed:
            print("committed %s %d %s" % (entity, ev["seq"], ev["id"]), flush=True)


if __name__ == "__main__":
    if len(sys.argv) != 6:
        sys.exit(__doc__)
    main(*sys.argv[1:])
