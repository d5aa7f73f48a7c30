#!/usr/bin/python3
# Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
"""outbox-admin end to end against the MongoDB test server (or a real replica set through
OUTBOX_TEST_MONGODB_URI): status, listing with filters, discard with its audit record,
requeue with a real relay and subscriber, exit codes. Documents are written with pymongo
following the stored contract; dead letters are made the way the relay makes them.

usage: test_admin.py OUTBOX_ADMIN OUTBOX_RELAY [TEST_NAME ...]  (under tests/fixtures/with-servers)
"""

import datetime
import json
import os
import subprocess
import sys
import time
import traceback

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from relaytest import db_name  # noqa: E402 (the run's database names)
from relaytest import (MONGO_URI, MQTT_URI, WORKDIR, Entities, Int64, Relay,  # noqa: E402
                       Subscriber, event, pymongo, wait_until)

ADMIN_BIN = sys.argv[1]
RELAY_BIN = sys.argv[2]
RUN = "%d" % os.getpid()
client = pymongo.MongoClient(MONGO_URI) if MONGO_URI else None
NOW = datetime.datetime.utcnow().replace(microsecond=0)


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def names(test):
    return db_name("admin_e2e_%s_%s" % (test, RUN)), "things_%s" % RUN


def admin(db, coll, *args, env=None, uri=None):
    """Runs outbox-admin; returns (exit status, stdout, stderr)."""
    cmd = [ADMIN_BIN, "--database", db, "--collection", coll] + list(args)
    environ = dict(os.environ, OUTBOX_MONGODB_URI=uri or MONGO_URI, **(env or {}))
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=environ)
    return p.returncode, p.stdout, p.stderr


def json_lines(out):
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def dead_letter(coll, eid, seq, reason, at=None):
    """Moves the pending event with @seq of @eid to the dead letters as the relay does."""
    doc = coll.find_one({"_id": eid})
    ev = [e for e in doc["events"] if e["seq"] == seq][0]
    coll.update_one({"_id": eid}, {"$pull": {"events": {"$in": [ev]}},
                                   "$push": {"deadLetters": {"event": ev, "reason": reason,
                                                             "at": at or NOW,
                                                             "relay": "test-relay"}}})
    return ev["id"]


def aged(seq, minutes):
    e = event(seq)
    e["time"] = NOW - datetime.timedelta(minutes=minutes)
    return e


def test_status_counts_relays_and_max_age():
    """Counts, ages, the old checkpoint document, a group's leases and members, and the
    --max-age exit status."""
    db, cname = names("status")
    coll = client[db][cname]
    ents = Entities(coll)
    ents.create("a", events=[aged(1, 10), aged(2, 9)])
    ents.create("b", events=[aged(1, 1)])
    ents.create("c", n_events=0)
    dead_letter(coll, "a", 1, "message larger than max-message-bytes")
    state = client[db]["outbox_relay_state"]
    state.insert_one({"_id": "old-relay", "token": {"_data": "00"},
                      "updatedAt": NOW - datetime.timedelta(seconds=30)})
    far = NOW + datetime.timedelta(days=1)
    state.insert_one({"_id": "grp", "partitions": 2, "createdAt": NOW})
    state.insert_one({"_id": {"relay": "grp", "partition": 0}, "partitions": 2,
                      "owner": "h/1/aaaaaaaa", "epoch": Int64(3), "expiresAt": far,
                      "tokenAt": NOW, "token": None, "handoff": None})
    state.insert_one({"_id": {"relay": "grp", "partition": 1}, "partitions": 2,
                      "owner": "h/2/bbbbbbbb", "epoch": Int64(7),
                      "expiresAt": NOW - datetime.timedelta(days=1), "tokenAt": NOW,
                      "token": None, "handoff": None})
    state.insert_one({"_id": {"relay": "grp", "member": "h/1/aaaaaaaa"}, "host": "h",
                      "pid": 1, "startedAt": NOW, "expiresAt": far, "owned": 1})

    rc, out, err = admin(db, cname, "status", "--json")
    check(rc == 0, "status: %d %s" % (rc, err))
    st = json.loads(out)
    c = st["collections"][0]
    check(c["pendingDocuments"] == 2 and c["pendingEvents"] == 2, c)
    check(c["deadLetters"] == 1 and c["deadLetterDocuments"] == 1, c)
    check(8.5 * 60 < c["oldestPendingAgeSeconds"] < 20 * 60, c)
    relays = {r["name"]: r for r in st["relays"]}
    check(25 <= relays["old-relay"]["checkpointAgeSeconds"] < 600, relays["old-relay"])
    grp = relays["grp"]
    check(grp["partitions"] == 2 and grp["owned"] == 1 and grp["liveMembers"] == 1, grp)
    leases = {l["partition"]: l for l in grp["leases"]}
    check(leases[0]["state"] == "owned" and leases[0]["epoch"] == 3, leases)
    check(leases[1]["state"] == "expired" and leases[1]["epoch"] == 7, leases)

    rc, out, err = admin(db, cname, "status")
    check(rc == 0 and "RELAY grp: 2 partitions, 1 owned, 1 live member" in out, out + err)
    check("h/1/aaaaaaaa" in out and "(expired)" in out and "RELAY old-relay" in out, out)
    rc, out, err = admin(db, cname, "status", "--max-age", "5m")
    check(rc == 1 and "older than" not in out and "--max-age" in err, (rc, err))
    rc, _, err = admin(db, cname, "status", "--max-age", "1h")
    check(rc == 0, (rc, err))


def test_listing_filters():
    db, cname = names("list")
    coll = client[db][cname]
    ents = Entities(coll)
    ents.create("a", events=[aged(1, 10), event(2, "Renamed"), event(3)])
    ents.create("b", events=[event(1)])
    ents.create(Int64(42), events=[event(1)])
    dead_letter(coll, "a", 3, "refused by the broker")
    dead_letter(coll, "b", 1, "topic longer than MQTT allows (65535 bytes)")

    rc, out, err = admin(db, cname, "pending", "--json")
    check(rc == 0, err)
    rows = json_lines(out)
    check(len(rows) == 3, rows)
    check(set(json.dumps(r["entity"]) for r in rows) == {'"a"', "42"}, rows)
    rc, out, _ = admin(db, cname, "pending", "--json", "--type", "Renamed")
    check([r["seq"] for r in json_lines(out)] == [2], out)
    rc, out, _ = admin(db, cname, "pending", "--json", "--older-than", "5m")
    check([r["seq"] for r in json_lines(out)] == [1], out)
    rc, out, _ = admin(db, cname, "pending", "--json", "--id-json", "42")
    check(len(json_lines(out)) == 1, out)
    rc, out, _ = admin(db, cname, "pending", "--limit", "2")
    check(rc == 0 and len(out.splitlines()) == 3 and out.startswith("COLLECTION\t"), out)

    rc, out, _ = admin(db, cname, "dead-letters", "--json")
    check(len(json_lines(out)) == 2, out)
    rc, out, _ = admin(db, cname, "dead-letters", "--json", "--reason-contains", "MQTT")
    rows = json_lines(out)
    check(len(rows) == 1 and rows[0]["entity"] == "b" and rows[0]["relay"] == "test-relay", rows)
    rc, out, _ = admin(db, cname, "dead-letters", "--id", "a")
    check(rc == 0 and "refused by the broker" in out and "\ta\t3\t" in out, out)


def test_discard_keeps_an_audit_record():
    db, cname = names("discard")
    coll = client[db][cname]
    Entities(coll).create("a", events=[event(1), event(2)])
    eid = dead_letter(coll, "a", 2, "refused by the broker")
    before = coll.find_one({"_id": "a"})

    rc, _, err = admin(db, cname, "discard", "--event-id", eid)
    check(rc == 64 and "--reason" in err, (rc, err))
    rc, _, err = admin(db, cname, "discard", "--reason", "x")
    check(rc == 64 and "--all" in err, (rc, err))
    rc, out, err = admin(db, cname, "discard", "--event-id", eid, "--reason", "obsolete",
                         "--dry-run")
    check(rc == 0 and "would discard" in out and eid in out, out + err)
    check(coll.find_one({"_id": "a"}) == before, "dry run changed the document")

    rc, out, err = admin(db, cname, "discard", "--event-id", eid, "--reason", "obsolete",
                         "--by", "alice@ops")
    check(rc == 0 and "1 done" in err, out + err)
    doc = coll.find_one({"_id": "a"})
    check(doc.get("deadLetters") == [], doc)
    rec = doc["discardedLetters"][0]
    check(rec["event"]["id"] == eid and rec["reason"] == "refused by the broker", rec)
    check(rec["discarded"]["by"] == "alice@ops" and rec["discarded"]["reason"] == "obsolete", rec)
    check(len(doc["events"]) == 1 and doc["version"] == before["version"], doc)
    rc, out, _ = admin(db, cname, "dead-letters", "--discarded", "--json")
    rows = json_lines(out)
    check(len(rows) == 1 and rows[0]["discarded"]["by"] == "alice@ops", rows)
    rc, out, err = admin(db, cname, "discard", "--all", "--reason", "again")
    check(rc == 0 and "0 done" in err, out + err)


def test_errors_and_config_file():
    db, cname = names("errors")
    rc, _, err = admin(db, cname, "frobnicate")
    check(rc == 64 and "unknown command" in err, err)
    rc, _, err = admin(db, cname, "status", "--no-such-option")
    check(rc == 64, err)
    rc, _, err = admin(db, cname, "status", "--max-age", "soon")
    check(rc == 64 and "duration" in err, err)
    rc, _, err = admin(db, cname, "status", uri="mongodb://127.0.0.1:1/?serverSelectionTimeoutMS=300")
    check(rc == 69, (rc, err))
    # The relay's own config file works as it is (MQTT keys included).
    path = os.path.join(WORKDIR, "admin-relay-%s.json" % RUN)
    with open(path, "w") as f:
        json.dump({"mongodb-uri": MONGO_URI, "database": db, "collections": [cname],
                   "mqtt-uri": "tcp://127.0.0.1:1883", "name": "x"}, f)
    p = subprocess.run([ADMIN_BIN, "--config", path, "status", "--json"], capture_output=True,
                       text=True, timeout=60, env={k: v for k, v in os.environ.items()
                                                   if not k.startswith("OUTBOX_")})
    check(p.returncode == 0 and json.loads(p.stdout)["collections"][0]["name"] == cname,
          p.stdout + p.stderr)


def test_ensure_schema_and_requeue_under_it():
    """--print shows the validator; ensure-schema installs it (a malformed write is refused
    with 121); a requeue (marker, counter) and a discard are accepted under it."""
    db, cname = names("schema")
    rc, out, err = admin(db, cname, "ensure-schema", "--print")
    check(rc == 0 and json.loads(out)["$jsonSchema"]["title"] == "outbox stored contract",
          out + err)
    check(cname not in client[db].list_collection_names(), "--print changed something")
    rc, out, err = admin(db, cname, "ensure-schema", "--validation-level", "strict")
    check(rc == 0 and "action error, level strict" in out, out + err)
    coll = client[db][cname]
    try:
        coll.insert_one({"_id": "bad", "version": 1, "eventSeq": Int64(0)})
        check(False, "a document breaking the contract was accepted")
    except pymongo.errors.WriteError as exc:
        check(exc.code == 121, exc)
    ents = Entities(coll)
    ents.create("a", events=[event(1), event(2)])
    eid = dead_letter(coll, "a", 1, "refused by the broker")
    rc, out, err = admin(db, cname, "requeue", "--event-id", eid, "--by", "carol")
    check(rc == 0 and "1 done" in err, out + err)
    doc = coll.find_one({"_id": "a"})
    check([e["seq"] for e in doc["events"]] == [1, 2], doc)
    check(doc["events"][0]["requeued"]["by"] == "carol" and doc["requeues"] == 1, doc)
    eid2 = dead_letter(coll, "a", 2, "refused by the broker")
    rc, out, err = admin(db, cname, "discard", "--event-id", eid2, "--reason", "test")
    check(rc == 0 and "1 done" in err, out + err)
    # A validator someone else installed is left alone unless --combine.
    db2 = db + "_foreign"
    client[db2].create_collection(cname, validator={"name": {"$type": "string"}})
    rc, _, err = admin(db2, cname, "ensure-schema")
    check(rc == 65 and "--combine" in err, (rc, err))
    rc, out, err = admin(db2, cname, "ensure-schema", "--combine")
    check(rc == 0, out + err)


def brief(doc):
    """A document with long strings cut, for failure messages."""
    return json.dumps(doc, default=str)[:600]


def seqs_received(sub):
    return [json.loads(p.decode("utf-8"))["seq"] for _, p, _ in sub.snapshot()]


def test_requeue_reaches_a_subscriber():
    """A relay with a small --max-message-bytes dead-letters seq 2 of 3; requeued while the
    cause is not fixed, the relay takes it (the requeued marker exempts it from the seq rule)
    and dead-letters it again for its size; after a restart with the default limit a second
    requeue publishes it once, after seq 3, and it is cleared."""
    if not MQTT_URI:
        print("  (skipped: no broker)")
        return
    db, cname = names("requeue")
    coll = client[db][cname]
    sub = Subscriber("outbox/%s/#" % cname)
    relay = Relay(RELAY_BIN, db, [cname], "admin-rq-%s" % RUN, ["--max-message-bytes", "2000"])
    try:
        check(relay.wait_log("change stream open"), "relay did not open its stream")
        big = event(2, data={"blob": "x" * 5000})
        Entities(coll).create("r", events=[event(1), big, event(3)])
        check(wait_until(lambda: seqs_received(sub) == [1, 3], 30), seqs_received(sub))
        check(wait_until(lambda: len(coll.find_one({"_id": "r"}).get("deadLetters", [])) == 1
                         and not coll.find_one({"_id": "r"})["events"], 30),
              brief(coll.find_one({"_id": "r"})))
        rc, out, err = admin(db, cname, "requeue", "--id", "r", "--by", "dave")
        check(rc == 0 and "1 done" in err, out + err)
        check(wait_until(lambda: (coll.find_one({"_id": "r"}).get("deadLetters") or [{}])[0]
                         .get("event", {}).get("requeued", {}).get("count") == 1, 30),
              brief(coll.find_one({"_id": "r"})))
        letter = coll.find_one({"_id": "r"})["deadLetters"][0]
        check("max-message-bytes" in letter["reason"], brief(letter))
    finally:
        check(relay.stop() == 0, "relay exit status")
    relay = Relay(RELAY_BIN, db, [cname], "admin-rq-%s" % RUN)
    try:
        check(relay.wait_log("change stream open"), "relay did not open its stream")
        rc, out, err = admin(db, cname, "requeue", "--event-id", big["id"], "--by", "dave")
        check(rc == 0 and "1 done" in err, out + err)
        check(wait_until(lambda: seqs_received(sub) == [1, 3, 2], 30), seqs_received(sub))
        check(wait_until(lambda: not coll.find_one({"_id": "r"})["events"], 30),
              "the requeued event was not cleared")
        time.sleep(1.0)  # a second delivery would come within this
        check(seqs_received(sub) == [1, 3, 2], seqs_received(sub))
        ce = json.loads(sub.snapshot()[-1][1].decode("utf-8"))
        check(ce["id"] == big["id"] and ce["data"]["blob"] == "x" * 5000, ce["id"])
        doc = coll.find_one({"_id": "r"})
        check(doc["deadLetters"] == [] and doc["requeues"] == 2 and doc["eventSeq"] == 3,
              brief(doc))
    finally:
        sub.close()
        check(relay.stop() == 0, "relay exit status")


def test_status_of_a_running_group():
    """Two relays with one name and 4 partitions: status reads their real lease and member
    documents (the stored schema of relay groups)."""
    if not MQTT_URI:
        print("  (skipped: no broker)")
        return
    db, cname = names("group")
    name = "admin-grp-%s" % RUN
    extra = ["--partitions", "4", "--lease-ttl-ms", "3000", "--lease-renew-ms", "500",
             "--lease-margin-ms", "1000"]
    relays = [Relay(RELAY_BIN, db, [cname], name, extra) for _ in range(2)]
    try:
        def grp():
            rc, out, _ = admin(db, cname, "status", "--json")
            rel = [r for r in json.loads(out)["relays"] if r["name"] == name] if rc == 0 else []
            return rel[0] if rel else None
        check(wait_until(lambda: (grp() or {}).get("owned") == 4 and
                         grp().get("liveMembers") == 2, 30), grp())
        g = grp()
        check(g["partitions"] == 4 and len(g["leases"]) == 4, g)
        owners = {l["owner"] for l in g["leases"]}
        check(owners == {m["member"] for m in g["members"]} and len(owners) == 2, g)
        check(all(l["state"] == "owned" and l["epoch"] >= 1 and 0 < l["expiresInSeconds"] <= 3.5
                  for l in g["leases"]), g["leases"])
        rc, out, _ = admin(db, cname, "status")
        check("RELAY %s: 4 partitions, 4 owned, 2 live member(s)" % name in out, out)
    finally:
        for r in relays:
            check(r.stop() == 0, "relay exit status")


def test_text_output_escapes_controls():
    """Issue 29, 9: an event type or reason holding terminal controls (OSC title, clear
    screen, CR LF, a tab) is printed escaped as the relay's log does: no raw control reaches
    the terminal, and it adds neither a row nor a column."""
    db, cname = names("escape")
    coll = client[db][cname]
    ents = Entities(coll)
    evil = "\x1b]0;pwned\x07\x1b[2J\r\nfake\trow\u009b"
    ents.create("e\x1b[1m", events=[event(1, evil), event(2, evil)])
    dead_letter(coll, "e\x1b[1m", 2, "why\x1b[31m\nforged\tcol")
    outs = {}
    for args in (["pending"], ["dead-letters"], ["requeue", "--all", "--dry-run"]):
        rc, out, err = admin(db, cname, *args)
        check(rc == 0, (args, rc, err))
        check(not any(c in out for c in "\x1b\x07\r\u009b"), "raw control in %s: %r" % (args, out))
        outs[args[0]] = out
    for name, rows in (("pending", 2), ("dead-letters", 2), ("requeue", 1)):
        lines = outs[name].splitlines()
        check(len(lines) == rows, "%s: %d lines: %r" % (name, len(lines), outs[name]))
        header_cols = 7 if name == "pending" else 10
        check(len(lines[-1].split("\t")) == header_cols + (1 if name == "requeue" else 0),
              "%s: columns %r" % (name, lines[-1]))
    shown = "\\x1b]0;pwned\\x07\\x1b[2J\\r\\nfake\\trow\\xc2\\x9b"
    check(shown in outs["pending"] and "e\\x1b[1m\t" in outs["pending"], outs["pending"])
    check("why\\x1b[31m\\nforged\\tcol" in outs["dead-letters"], outs["dead-letters"])


def test_id_json_is_one_entity():
    """Issue 29, 10: --id-json names one entity. A query operator matched every entity (so
    `discard --id-json '{"$ne": null}'` discarded everything, past the "a filter or --all"
    rule; $where exited 70): refused with 64, nothing changed."""
    db, cname = names("idjson")
    coll = client[db][cname]
    ents = Entities(coll)
    for eid in ("a", "b"):
        ents.create(eid, events=[event(1)])
        dead_letter(coll, eid, 1, "r")
    for value, op in (('{"$ne": null}', "$ne"), ('{"$where": "1"}', "$where"),
                      ('{"$gt": ""}', "$gt")):
        rc, _, err = admin(db, cname, "discard", "--id-json", value, "--reason", "x")
        check(rc == 64 and "holds the query operator '%s', not an entity id" % op in err,
              (value, rc, err))
    rc, _, err = admin(db, cname, "pending", "--id-json", '["a"]')
    check(rc == 64 and "is an array" in err, (rc, err))
    check(all(len(d.get("deadLetters", [])) == 1 for d in coll.find()), "something discarded")
    rc, out, err = admin(db, cname, "dead-letters", "--json", "--id-json", '"a"')
    check(rc == 0 and [r["entity"] for r in json_lines(out)] == ["a"], (rc, out, err))


def test_arguments_mean_what_they_say():
    """Issue 29, 11: --max-age 0 means no pending event at all; an overflowing --limit is
    refused; an --id-json parse error names the option and quotes what was typed; ensure-schema
    on a view is a configuration error (78), not a usage error. Issue 29, 7: a document whose
    events field is not an array is reported with 65, the others still counted."""
    db, cname = names("args")
    coll = client[db][cname]
    Entities(coll).create("a", events=[event(1)])
    rc, _, err = admin(db, cname, "status", "--max-age", "0")
    check(rc == 1 and "--max-age 0.0 s" in err, (rc, err))
    rc, _, err = admin(db, cname, "status", "--max-age", "1h")
    check(rc == 0, (rc, err))
    rc, _, err = admin(db, cname, "pending", "--limit", "99999999999999999999")
    check(rc == 64 and "--limit: expected a number from 1 to 9223372036854775807, got "
          "'99999999999999999999'" in err, (rc, err))
    rc, _, err = admin(db, cname, "pending", "--id-json", '{"a": 1')
    check(rc == 64 and "--id-json: '{\"a\": 1' is not one JSON value" in err, (rc, err))
    rc, _, err = admin(db, cname, "pending", "--id-json", '1, "w": 2')
    check(rc == 64 and "is not one JSON value" in err, (rc, err))
    client[db].command("create", "a_view", viewOn=cname, pipeline=[])
    rc, _, err = admin(db, "a_view", "ensure-schema")
    check(rc == 78 and "is a view" in err, (rc, err))
    rc, _, err = admin(db, "a_view", "ensure-schema", "--validation-action", "shout")
    check(rc == 64, (rc, err))

    coll.insert_one({"_id": "odd", "version": Int64(1), "eventSeq": Int64(1),
                     "events": {"0": event(1)}})
    rc, out, err = admin(db, cname, "status", "--json")
    check(rc == 65 and "1 document breaks the stored contract" in err, (rc, err))
    row = json.loads(out)["collections"][0]
    check(row["pendingEvents"] == 1 and row["malformedDocuments"] == 1, row)


TESTS = [test_status_counts_relays_and_max_age, test_listing_filters,
         test_discard_keeps_an_audit_record, test_errors_and_config_file,
         test_ensure_schema_and_requeue_under_it, test_requeue_reaches_a_subscriber,
         test_status_of_a_running_group, test_text_output_escapes_controls,
         test_id_json_is_one_entity, test_arguments_mean_what_they_say]


def main():
    if not MONGO_URI:
        print("admin-e2e: OUTBOX_TEST_MONGODB_URI not set (run under with-servers)")
        return 77
    wanted = sys.argv[3:]
    failed = 0
    for t in TESTS:
        if wanted and t.__name__ not in wanted:
            continue
        try:
            t()
            print("ok   %s" % t.__name__)
        except Exception:  # noqa: BLE001
            failed += 1
            print("FAIL %s" % t.__name__)
            traceback.print_exc()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
