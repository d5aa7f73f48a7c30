#!/usr/bin/python3
# Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
"""A Python writer against a collection whose stored contract is enforced by MongoDB.

liboutbox installs the validator (outbox_collection_ensure_schema() through
lib-schema-tool); a pymongo writer then commits changes the way the README tells other
languages to: a well-formed commit passes, and malformed ones (an int32 seq, a string time,
an event without an id) are refused by the server itself with error 121 and an errInfo that
names the rule. The relay's own writes (clearing, dead-lettering) still pass.

usage: test_schema_writer.py   (under tests/fixtures/with-servers; OUTBOX_TEST_SCHEMA_TOOL
names lib-schema-tool). Exit 77 (skip) when Debian's pymongo is missing.
"""

import datetime
import os
import subprocess
import sys
import uuid

try:
    import pymongo
    from bson.int64 import Int64
except ImportError:
    print("SKIP: pymongo is not installed for %s (Debian's python3-pymongo runs under "
          "/usr/bin/python3)" % sys.executable)
    sys.exit(77)

URI = os.environ.get("OUTBOX_TEST_MONGODB_URI")
TOOL = os.environ.get("OUTBOX_TEST_SCHEMA_TOOL")
DB = os.environ.get("OUTBOX_TEST_DB_PREFIX", "") + "outbox_schema_py"
COLL = "things_%d" % os.getpid()


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def now():
    return datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)


def event(n, etype="thing.changed", **override):
    """Event number `n` as the contract stores it; `override` replaces fields (None drops)."""
    ev = {"id": str(uuid.uuid4()), "seq": Int64(n), "type": etype, "time": now(),
          "data": {"n": n}}
    ev.update(override)
    return {k: v for k, v in ev.items() if v is not None}


def commit(coll, eid, version, event_seq, events, fields=None):
    """One change with its events, guarded by version and eventSeq (the stored contract)."""
    update = {"$set": dict(fields or {}, version=Int64(version + 1),
                           eventSeq=Int64(event_seq + len(events))),
              "$push": {"events": {"$each": events}}}
    return coll.update_one({"_id": eid, "version": Int64(version),
                            "eventSeq": Int64(event_seq)}, update)


def find_rule(details, prop, operator):
    """True if errInfo details hold a propertiesNotSatisfied entry for `prop` whose details
    name `operator` (searched at any depth: events -> items -> properties -> prop)."""
    if isinstance(details, dict):
        if details.get("propertyName") == prop and any(
                d.get("operatorName") == operator for d in details.get("details", [])):
            return True
        return any(find_rule(v, prop, operator) for v in details.values())
    if isinstance(details, list):
        return any(find_rule(v, prop, operator) for v in details)
    return False


def refused(coll, eid, version, event_seq, events, prop, operator):
    before = coll.find_one({"_id": eid})
    try:
        commit(coll, eid, version, event_seq, events)
    except pymongo.errors.WriteError as e:
        check(e.code == 121, "code %s, want 121: %s" % (e.code, e.details))
        info = e.details.get("errInfo", {})
        check(info.get("failingDocumentId") == eid, "failingDocumentId in %s" % info)
        check(info.get("details", {}).get("operatorName") == "$jsonSchema", "errInfo %s" % info)
        check(find_rule(info["details"], prop, operator),
              "errInfo does not name %s/%s: %s" % (prop, operator, info))
        check(coll.find_one({"_id": eid}) == before, "the document changed")
        return
    raise AssertionError("a malformed commit (%s) was accepted" % prop)


def main():
    if not URI or not TOOL:
        print("OUTBOX_TEST_MONGODB_URI and OUTBOX_TEST_SCHEMA_TOOL must be set")
        return 1
    subprocess.run([TOOL, "ensure", DB, COLL], check=True)
    client = pymongo.MongoClient(URI)
    coll = client[DB][COLL]
    try:
        info = client[DB].list_collections(filter={"name": COLL}).next()
        check(info["options"]["validator"]["$jsonSchema"]["title"] == "outbox stored contract",
              "validator not installed: %s" % info)
        eid = "order-1"
        coll.insert_one({"_id": eid, "status": "new", "version": Int64(1),
                         "eventSeq": Int64(1), "events": [event(1, "order.created")]})
        # Python ints are int32 in BSON: the classic mistake of a writer in another language.
        refused(coll, eid, 1, 1, [event(2, seq=2)], "seq", "bsonType")
        refused(coll, eid, 1, 1, [event(2, time=now().isoformat())], "time", "bsonType")
        refused(coll, eid, 1, 1, [event(2, etype="order shipped")], "type", "pattern")
        refused(coll, eid, 1, 1, [event(2, id=None)], "events", "items")
        # The well-formed commit passes.
        r = commit(coll, eid, 1, 1, [event(2, "order.paid")], {"status": "paid"})
        check(r.modified_count == 1, "the well-formed commit did not apply")
        doc = coll.find_one({"_id": eid})
        check(doc["version"] == 2 and len(doc["events"]) == 2, "stored: %s" % doc)
        # The relay's writes: clear a published event, dead-letter another.
        coll.update_one({"_id": eid}, {"$pull": {"events": {"seq": Int64(1)}}})
        poison = doc["events"][1]
        coll.update_one({"_id": eid, "events": poison},
                        {"$pull": {"events": {"id": poison["id"]}},
                         "$push": {"deadLetters": {"event": poison, "reason": "test",
                                                   "at": now(), "relay": "py"}}})
        doc = coll.find_one({"_id": eid})
        check(doc["events"] == [] and len(doc["deadLetters"]) == 1, "stored: %s" % doc)
        print("ok: malformed commits refused with 121, well-formed and relay writes pass")
        return 0
    finally:
        client[DB].drop_collection(COLL)
        client.close()


if __name__ == "__main__":
    sys.exit(main())
