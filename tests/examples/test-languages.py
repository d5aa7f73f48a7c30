#!/usr/bin/python3
# Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
"""Writers and consumers in other languages, end to end through outbox-relay. Every event a
writer committed reaches the consumer exactly once after de-duplication and in seq order per
entity, and the relay clears it from its document (so the writer kept the stored contract).
The example consumers also get a duplicate and a gap injected (in the scenario's payload
mode) and must recognise both; the example writers must refuse a stale commit.

  c-python-structured, c-python-binary     liboutbox (chaos-writer) -> examples/python consumer
  python-c                                 examples/python writer -> contacts-consumer (C)
  node-node-structured, node-node-binary   examples/node writer -> examples/node consumer

usage: test-languages.py --relay PATH [--c-writer PATH] [--c-consumer PATH] [--node-dir DIR]
                         [--schema-tool PATH] SCENARIO...
OUTBOX_TEST_MONGODB_URI and OUTBOX_TEST_MQTT_URI must be set (tests/fixtures/with-servers).
--schema-tool (tests/lib/lib-schema-tool) installs liboutbox's validator of the stored contract
(outbox_collection_ensure_schema) on every collection the example writers write, so MongoDB
itself refuses anything they get wrong. --node-dir is where the Node examples' packages get installed (npm ci, offline from npm's
cache when it has them); Node scenarios skip when node, npm or the packages cannot be had."""
import argparse
import collections
import os
import re
import sys
import uuid

import exampletest
import languages_node
from languages_proc import Process, publish_event, publisher, wait_until

try:
    import pymongo
    from bson import ObjectId
    from bson.int64 import Int64
except ImportError:
    print("examples-languages: SKIP: needs pymongo and paho-mqtt (run with /usr/bin/python3)")
    sys.exit(77)

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples")
MONGO = os.environ["OUTBOX_TEST_MONGODB_URI"]
MQTT = os.environ["OUTBOX_TEST_MQTT_URI"]
PID = os.getpid()
PREFIX = os.environ.get("OUTBOX_TEST_DB_PREFIX", "")  # the run's databases (--against)
UUID4 = r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"
CHECKS = exampletest.Checks("examples-languages")
check = CHECKS.check
sys.path.insert(0, os.path.join(EXAMPLES, "python"))
import outbox_writer  # noqa: E402 (the example itself, used as a module)


def start_relay(args, name, db, collection, mode):
    return Process(name + "-relay", [
        args.relay, "--mongodb-uri", MONGO, "--database", db, "--collection", collection,
        "--mqtt-uri", MQTT, "--name", "lang-%s-%d" % (name, PID), "--payload-mode", mode,
        "--metrics-listen", "off"])


def parse(lines, tag, n):
    """The fields of the lines starting with `tag` that have n fields."""
    return [l.split() for l in lines if l.startswith(tag + " ") and len(l.split()) == n]


def pending(db, collection):
    client = pymongo.MongoClient(MONGO)
    n = client[db][collection].count_documents({"events.0": {"$exists": True}})
    client.close()
    return n


def check_exactly_once(name, committed, applied):
    """committed: (entity, seq, id) as written; applied: (entity, seq, id, order) as the
    consumer applied them, in arrival order."""
    ids = collections.Counter(a[2] for a in applied)
    check(name + ": every committed event applied", all(ids[c[2]] == 1 for c in committed),
          [c for c in committed if ids[c[2]] != 1][:5])
    check(name + ": nothing applied that was not committed", len(applied) == len(committed),
          "%d applied, %d committed" % (len(applied), len(committed)))
    per_entity = collections.defaultdict(list)
    for entity, seq, _, order in applied:
        per_entity[entity].append((seq, order))
    expected = collections.Counter(c[0] for c in committed)
    for entity, got in sorted(per_entity.items()):
        check("%s: %s in seq order 1..%d" % (name, entity, expected[entity]),
              got == [(s, "in-order") for s in range(1, expected[entity] + 1)], got)


def inject(name, consumer, collection, mode, committed):
    """A redelivered event and an entity whose seq 3 arrives before 1 and 2 (an id the relay
    would percent-encode in binary mode)."""
    pub = publisher("lang-%s-pub-%d" % (name, PID))
    entity, seq, event_id = committed[0]
    ghost = "ghost/%s+1" % name
    publish_event(pub, collection, mode, entity, seq, event_id, "thing.replayed")
    publish_event(pub, collection, mode, ghost, 3, str(uuid.uuid4()), "thing.ghost")
    publish_event(pub, collection, mode, ghost, 1, str(uuid.uuid4()), "thing.ghost")
    pub.disconnect()
    done = consumer.wait_for(lambda ls: len(parse(ls, "applied", 7)) >= len(committed) + 2 and
                             any(l.startswith("duplicate %s %d %s" % (entity, seq, event_id))
                                 for l in ls))
    lines = consumer.lines()
    check(name + ": the redelivered event is skipped as a duplicate", done, lines[-5:])
    ghosts = [(a[2], a[5]) for a in parse(lines, "applied", 7) if a[1] == ghost]
    check(name + ": the gap is reported", "gap %s missing 1..2" % ghost in lines, lines[-5:])
    check(name + ": seq 3 applied as gap, seq 1 as late", ghosts == [("3", "gap"), ("1", "late")],
          ghosts)


def run_example_consumer(args, name, mode, consumer_argv, writer):
    """The example consumers (Python, Node): `writer(db, collection)` returns what it
    committed as (entity, seq, id)."""
    db, collection = PREFIX + "lang_%d" % PID, "things_" + name.replace("-", "_")
    consumer = Process(name + "-consumer",
                       consumer_argv + [MQTT, "outbox/%s/#" % collection, "consumer-%s-%d" % (name, PID)],
                       env=dict(os.environ, NODE_PATH=args.node_path or ""))
    check(name + ": consumer subscribes", consumer.wait_for(lambda ls: "subscribed" in ls))
    relay = start_relay(args, name, db, collection, mode)
    committed = writer(db, collection)
    check(name + ": writer committed events", len(committed) > 0)
    consumer.wait_for(lambda ls: len(parse(ls, "applied", 7)) >= len(committed))
    applied = [(a[1], int(a[2]), a[3], a[5]) for a in parse(consumer.lines(), "applied", 7)]
    check_exactly_once(name, [(e, int(s), i) for e, s, i in committed], applied)
    check(name + ": duplicates are only of applied events",
          all(d[3] in {a[2] for a in applied} for d in parse(consumer.lines(), "duplicate", 4)))
    inject(name, consumer, collection, mode, [(e, int(s), i) for e, s, i in committed])
    check(name + ": the relay cleared every event",
          wait_until(lambda: pending(db, collection) == 0, 30))
    check(name + ": consumer stops with status 0", consumer.stop() == 0, consumer.lines()[-3:])
    check(name + ": relay stops with status 0", relay.stop() == 0, relay.lines()[-3:])


def c_writer(args):
    def write(db, collection):
        proc = Process("c-writer-" + collection, [args.c_writer, MONGO, db, collection, "c-",
                                                  "0", "4", "40", "3", "7"])
        check("chaos-writer exits 0", proc.wait() == 0, proc.lines()[-3:])
        return [c[1:] for c in parse(proc.lines(), "C", 4)]
    return write


def node_writer(args):
    def write(db, collection):
        enforce_contract(args, db, collection)
        proc = Process("node-writer-" + collection,
                       ["node", os.path.join(EXAMPLES, "node", "writer.js"), MONGO, db,
                        collection, "3", "4"], env=dict(os.environ, NODE_PATH=args.node_path))
        check("node writer exits 0", proc.wait() == 0, proc.lines()[-3:])
        return [c[1:] for c in parse(proc.lines(), "committed", 4)]
    return write


def enforce_contract(args, db, collection):
    """MongoDB refuses (121) what breaks the stored contract in `collection` from now on."""
    if args.schema_tool:
        proc = Process("schema-" + collection, [args.schema_tool, "ensure", db, collection])
        check("validator installed on %s.%s" % (db, collection), proc.wait() == 0,
              proc.lines()[-3:])


def check_stored_contract(label, doc):
    """The field types of THE STORED CONTRACT: pymongo reads a BSON int64 as Int64 and an int32
    as int, so a writer storing plain numbers fails here even though the relay would cope."""
    ev = (doc.get("events") or [{}])[0]
    types = [type(v).__name__ for v in (doc.get("version"), doc.get("eventSeq"), ev.get("seq"),
                                        ev.get("time"), ev.get("data"))]
    check(label + ": version, eventSeq and seq are Int64, time a date, data a document",
          types == ["Int64", "Int64", "Int64", "datetime", "dict"], types)
    check(label + ": the event id is a lowercase UUID v4",
          re.fullmatch(UUID4, str(ev.get("id"))) is not None, ev.get("id"))


def check_python_conflicts(args):
    """The Python writer refuses a stale expected version, and a change that lands between
    its read and its write (a collection whose find_one answers with what it read before
    another writer moved on), writing nothing."""
    enforce_contract(args, PREFIX + "lang_conflicts_%d" % PID, "python")
    coll = pymongo.MongoClient(MONGO, w="majority")[PREFIX + "lang_conflicts_%d" % PID]["python"]
    outbox_writer.create(coll, "c", {"n": 0}, [])
    outbox_writer.update(coll, "c", 1, {"n": 1}, [("thing.changed", {})])

    def refused(target, version):
        try:
            outbox_writer.update(target, "c", version, {"n": 99}, [("thing.changed", {})])
        except outbox_writer.Conflict:
            return True
        return False

    check("python writer: a stale expected version is a Conflict", refused(coll, 1))
    before = coll.find_one({"_id": "c"})
    outbox_writer.update(coll, "c", 2, {"n": 2}, [])  # overtakes the read below

    class Overtaken:
        find_one = staticmethod(lambda *a, **k: before)
        update_one = staticmethod(coll.update_one)

    check("python writer: a change between its read and its write is a Conflict",
          refused(Overtaken(), 2))
    after = coll.find_one({"_id": "c"})
    check("python writer: a refused commit writes nothing",
          (after["n"], after["version"], after["eventSeq"]) == (2, 3, 1), after)
    check_stored_contract("python writer", after)
    # An event's expiry (issue 38): a datetime stored as the Date expiresAt.
    import datetime
    when = datetime.datetime(2031, 1, 2, 3, 4, 5)
    outbox_writer.update(coll, "c", 3, {}, [("thing.changed", {}, {"expires_at": when})])
    stored = coll.find_one({"_id": "c"})["events"][-1]
    check("python writer: expiresAt stored as a Date", stored.get("expiresAt") == when, stored)


def python_to_c(args):
    name, db, collection = "python-c", PREFIX + "lang_%d" % PID, "contacts_%d" % PID
    consumer = Process(name + "-consumer", [
        args.c_consumer, "--mqtt-uri", MQTT, "--mongodb-uri", MONGO,
        "--database", PREFIX + "lang_directory_%d" % PID, "--topic", "outbox/%s/#" % collection,
        "--client-id", "consumer-%s-%d" % (name, PID)])
    check(name + ": consumer subscribes",
          consumer.wait_for(lambda ls: any("subscribed to" in l for l in ls)))
    relay = start_relay(args, name, db, collection, "structured")
    enforce_contract(args, db, collection)
    coll = pymongo.MongoClient(MONGO, w="majority")[db][collection]
    final = {}
    for k in range(3):
        cid, name_k = str(ObjectId()), {"firstName": "Ada%d" % k, "lastName": "Lovelace"}
        outbox_writer.create(coll, cid, {"name": name_k}, [("ContactCreated", {
            "name": name_k, "email": "ada%d@example.org" % k,
            "company": {"companyName": "Engines"}})])
        email = "countess%d@example.org" % k
        version, _ = outbox_writer.update(coll, cid, 1, {"email": email},
                                          [("ContactEmailUpdated", {"email": email})])
        company = {"companyName": "Estates %d" % k}
        outbox_writer.update(coll, cid, version, {"company": company}, [
            ("ContactCompanyUpdated", {"company": company}), ("ContactDeleted", {})])
        final[cid] = (email, "Estates %d" % k)
    want = 4 * len(final)
    consumer.wait_for(lambda ls: sum("consumer: applied" in l for l in ls) >= want)
    applied = [l.split() for l in consumer.lines() if l.startswith("consumer: applied")]
    seen = [(a[3][len("contact="):], int(a[4][len("seq="):]), a[5]) for a in applied]
    check(name + ": %d events applied once each" % want, len(seen) == want == len(set(seen)), seen)
    for cid in final:
        mine = [(s, order) for c, s, order in seen if c == cid]
        check("%s: %s in seq order" % (name, cid), mine == [(s, "in-order") for s in (1, 2, 3, 4)],
              mine)
    directory = pymongo.MongoClient(MONGO)[PREFIX + "lang_directory_%d" % PID]["directory"]
    for cid, (email, company) in final.items():
        entry = directory.find_one({"_id": cid}) or {}
        check("%s: %s in the C consumer's read model" % (name, cid),
              (entry.get("email"), entry.get("company", {}).get("companyName"),
               entry.get("deleted")) == (email, company, True), entry)
    check(name + ": the relay cleared every event",
          wait_until(lambda: pending(db, collection) == 0, 30))
    check(name + ": consumer stops with status 0", consumer.stop() == 0)
    check(name + ": relay stops with status 0", relay.stop() == 0, relay.lines()[-3:])


def main():
    parser = argparse.ArgumentParser()
    for opt in ("--relay", "--c-writer", "--c-consumer", "--node-dir", "--schema-tool"):
        parser.add_argument(opt)
    parser.add_argument("scenarios", nargs="+")
    args = parser.parse_args()
    if all(s.startswith("node") for s in args.scenarios):
        CHECKS.name = "examples-node"
    args.node_path = None
    if any(s.startswith("node") for s in args.scenarios):
        args.node_path, why = languages_node.prepare(args.node_dir, EXAMPLES)
        if not args.node_path:
            print("skip: the Node scenarios: %s" % why)
            return 77
        enforce_contract(args, PREFIX + "lang_conflicts_%d" % PID, "node")
        languages_node.check_node_conflicts(check, args.node_path, MONGO, EXAMPLES)
        check_stored_contract("node writer", pymongo.MongoClient(MONGO)[
            PREFIX + "lang_conflicts_%d" % PID]["node"].find_one({"_id": "c"}) or {})
    python_consumer = ["/usr/bin/python3", os.path.join(EXAMPLES, "python", "outbox_consumer.py")]
    node_consumer = ["node", os.path.join(EXAMPLES, "node", "consumer.js")]
    for s in args.scenarios:
        mode = "binary" if s.endswith("-binary") else "structured"
        if s.startswith("c-python"):
            run_example_consumer(args, s, mode, python_consumer, c_writer(args))
        elif s.startswith("node-node"):
            run_example_consumer(args, s, mode, node_consumer, node_writer(args))
        elif s == "python-c":
            check_python_conflicts(args)
            python_to_c(args)
        else:
            parser.error("unknown scenario " + s)
    return CHECKS.summary()


if __name__ == "__main__":
    sys.exit(main())
