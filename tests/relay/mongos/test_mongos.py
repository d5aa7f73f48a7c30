#!/usr/bin/env python3
# Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
"""liboutbox and outbox-relay through mongos (issue 26, "Sharded clusters"), against
test-mongod --mongos --shards 2 (with-servers --mongod-arg --mongos ...): collections sharded
by hashed _id and by {tenant: 1, _id: 1} (split at tenant "m", the upper chunk on the other
shard, so both shards hold entities). liboutbox commits (chaos-writer), one relay and a
group of three publish every event once and in order per entity, clears and dead-letter moves
are accepted (the relay logs a move only when modifiedCount is 1), sweeps and outbox-admin
status/pending work, and a sharded state or lease collection is refused with exit 78.

usage: test_mongos.py OUTBOX-RELAY OUTBOX-ADMIN CHAOS-WRITER [TEST...]
"""

import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
from relaytest import db_name, needing  # noqa: E402
from relaytest import (MONGO_URI, WORKDIR, Entities, Relay, Subscriber, event,  # noqa: E402
                       pymongo, run_tests, wait_until)
from grouptest import LEASE_OPTS  # noqa: E402
from bson.min_key import MinKey  # noqa: E402

RELAY_BIN, ADMIN_BIN, WRITER_BIN = sys.argv[1:4] if len(sys.argv) > 3 else (None,) * 3
RUN = "%d" % os.getpid()
client = pymongo.MongoClient(MONGO_URI) if MONGO_URI else None


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def sharded(test, key):
    """A new database with collection "things" sharded by @key ("hashed" or "compound");
    returns (db name, collection)."""
    dbname = db_name("mongos_%s_%s" % (test, RUN))
    ns = dbname + ".things"
    admin = client.admin
    # The first two shards by name (test-mongod's are shard0, shard1; a cluster's its own).
    first, second = sorted(x["_id"] for x in admin.command("listShards")["shards"])[:2]
    admin.command("enableSharding", dbname, primaryShard=first)
    if key == "hashed":
        admin.command("shardCollection", ns, key={"_id": "hashed"})
    else:
        admin.command("shardCollection", ns, key={"tenant": 1, "_id": 1})
        admin.command("split", ns, middle={"tenant": "m", "_id": MinKey()})
        admin.command("moveChunk", ns, find={"tenant": "x"}, to=second)
    uuid = client.config.collections.find_one({"_id": ns})["uuid"]
    shards = {c["shard"] for c in client.config.chunks.find() if c["uuid"] == uuid}
    check(sorted(shards) == [first, second], "chunks of %s on %s" % (ns, shards))
    return dbname, client[dbname]["things"]


def write(dbname, prefix, count, events, tenants=True):
    """chaos-writer (liboutbox) commits @events events to @count entities; returns
    {event id: (entity, seq)} of what it committed."""
    out = os.path.join(WORKDIR, "writer-%s-%s.out" % (dbname, prefix))
    env = dict(os.environ, CHAOS_WRITER_TENANTS="1" if tenants else "0",
               MONGOC_DISABLE_SHM="1")
    with open(out, "wb") as f:
        r = subprocess.run([WRITER_BIN, MONGO_URI, dbname, "things", prefix, "0", str(count),
                            str(events), "3", "7"], stdout=f, stderr=subprocess.PIPE,
                           env=env, timeout=120)
    check(r.returncode == 0, "chaos-writer: %d %s" % (r.returncode, r.stderr[-500:]))
    committed = {}
    for line in open(out).read().splitlines():
        parts = line.split(" ")
        if parts[0] == "C":
            committed[parts[3]] = (parts[1], int(parts[2]))
    check(len(committed) == events, "writer committed %d of %d" % (len(committed), events))
    return committed


def admin(dbname, *args):
    """outbox-admin on collection "things" of @dbname; (exit status, stdout, stderr)."""
    r = subprocess.run([ADMIN_BIN, "--database", dbname, "--collection", "things"] +
                       list(args), capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, OUTBOX_MONGODB_URI=MONGO_URI))
    return r.returncode, r.stdout, r.stderr


def verify(committed, sub, timeout=60):
    """Every committed event published exactly once, in seq order per entity."""
    wait_until(lambda: sub.count() >= len(committed), timeout)
    time.sleep(0.5)
    seen, per_entity = {}, {}
    for _, payload, _ in sub.snapshot():
        ce = json.loads(payload.decode("utf-8"))
        seen[ce["id"]] = seen.get(ce["id"], 0) + 1
        per_entity.setdefault(ce["subject"], []).append(int(ce["seq"]))
    lost = [i for i in committed if i not in seen]
    dups = sum(n - 1 for n in seen.values())
    phantom = [i for i in seen if i not in committed]
    check(not lost and not dups and not phantom,
          "lost %d, duplicates %d, phantom %d" % (len(lost), dups, len(phantom)))
    for entity, seqs in per_entity.items():
        check(seqs == sorted(seqs), "entity %s published %s" % (entity, seqs))


def wait_cleared(coll, timeout=30):
    return wait_until(lambda: coll.count_documents({"events.0": {"$exists": True}}) == 0,
                      timeout)


def publish_through(key):
    dbname, coll = sharded("one_" + key, key)
    sub = Subscriber("outbox/things/#")
    before = write(dbname, "pre", 20, 60)  # pending before the relay: its sweep sends them
    relay = Relay(RELAY_BIN, dbname, ["things"], "r-" + dbname)
    try:
        check(relay.wait_log("change stream open", 30), "no stream through mongos")
        after = write(dbname, "e", 30, 300)
        verify(dict(before, **after), sub)
        check(wait_cleared(coll), "events not cleared through mongos")
        check("sweep" in relay.log_text(), "the events written before the relay were not swept")
        check(len(coll.distinct("tenant")) > 13, "entities not spread over tenants")
        check(relay.stop() == 0, "relay did not exit 0")
    finally:
        relay.stop()
        sub.close()


def test_hashed_id_one_relay():
    publish_through("hashed")


def test_compound_key_one_relay():
    publish_through("compound")


def test_dead_letters_and_admin_compound_key():
    """An oversized event between two good ones on each shard: the move to the dead letters
    is accepted (logged, so modifiedCount was 1), the good ones are published and cleared,
    and outbox-admin status and pending read the sharded collection."""
    dbname, coll = sharded("dead", "compound")
    ents = Entities(coll)
    for tenant in ("b", "x"):
        ents.coll.insert_one({"_id": "big-" + tenant, "tenant": tenant, "version": 1,
                              "eventSeq": 3, "events": [event(1), event(2, data={
                                  "big": "x" * 8000}), event(3)]})
    ents.coll.insert_one({"_id": "waiting", "tenant": "q", "version": 1, "eventSeq": 1,
                          "events": [event(1)]})
    rc, out, err = admin(dbname, "status", "--json")
    check(rc == 0, "status: %s" % err)
    c = json.loads(out)["collections"][0]
    check(c["pendingDocuments"] == 3 and c["pendingEvents"] == 7, c)
    rc, out, err = admin(dbname, "pending", "--json")
    check(rc == 0 and len(out.splitlines()) == 7, "pending: %s %s" % (out, err))
    sub = Subscriber("outbox/things/#")
    relay = Relay(RELAY_BIN, dbname, ["things"], "r-" + dbname,
                  ["--max-message-bytes", "4096"])
    try:
        check(wait_until(lambda: sub.count() >= 5, 30), "only %d published" % sub.count())
        check(wait_cleared(coll), "not cleared")
        check(wait_until(lambda: relay.log_text().count("dead-lettered an event of") == 2, 10),
              "dead-letter moves not accepted: %s" % relay.log_text()[-2000:])
        for tenant in ("b", "x"):
            d = coll.find_one({"_id": "big-" + tenant})
            check(len(d.get("deadLetters", [])) == 1, d)
        check(relay.stop() == 0, "relay did not exit 0")
    finally:
        relay.stop()
        sub.close()
    rc, out, err = admin(dbname, "status", "--json")
    c = json.loads(out)["collections"][0] if rc == 0 else err
    check(c["pendingEvents"] == 0 and c["deadLetters"] == 2, c)


def test_group_of_three_compound_key():
    """Three relays of one group through mongos share the partitions; every event once, in
    order, with the load written while the members still hand partitions over to each other
    (tests/chaos/FINDINGS.md F13: duplicates on those handoffs through mongos came from
    test-mongod's mongos, whose ping and first stream tokens were behind a shard's clock; no
    wait for a balanced group since both were fixed)."""
    dbname, coll = sharded("group", "compound")
    sub = Subscriber("outbox/things/#")
    relays = [Relay(RELAY_BIN, dbname, ["things"], "grp", LEASE_OPTS) for _ in range(3)]
    try:
        state = client[dbname]["outbox_relay_state"]

        def owners():
            return {d["_id"]["partition"]: d.get("owner") for d in
                    state.find({"_id.relay": "grp", "_id.partition": {"$exists": True}})}
        for r in relays:
            check(r.wait_log("change stream open", 30), "a member opened no stream")
        before = owners()
        committed = write(dbname, "g", 40, 400)
        after = owners()
        moved = sum(1 for p, o in after.items() if before.get(p) != o)
        print("  partitions that changed owner while the load was written: %d" % moved,
              flush=True)
        verify(committed, sub)
        check(wait_cleared(coll), "not cleared")
        status = {}

        def all_owned():  # a partition being handed over between members is not "owned"
            rc, out, err = admin(dbname, "status", "--json")
            relays = json.loads(out)["relays"] if rc == 0 else []
            status.update(rc=rc, err=err, grp={r["name"]: r for r in relays}.get("grp", {}))
            grp = status["grp"]
            return grp.get("partitions") == 32 and grp.get("owned") == 32 and \
                grp.get("liveMembers") == 3
        check(wait_until(all_owned, 15, 0.5), "status of the group: %s" % status)
        for r in relays:
            check(r.stop() == 0, "a member did not exit 0")
    finally:
        for r in relays:
            r.stop()
        sub.close()


def test_tenants_cluster_stream():
    """Patterns over two sharded tenant databases (issue 37): one cluster stream through
    mongos, events swept and streamed from both, and a tenant created while running."""
    (db_a, coll_a), (db_b, coll_b) = sharded("nsa", "hashed"), sharded("nsb", "hashed")
    sub = Subscriber("outbox/things/#")
    before = write(db_a, "pa", 10, 30)
    # Every name after the run's prefix (scripts/test --against): a pattern without it
    # matches none of sharded()'s databases, whose events are then never watched (F17).
    relay = Relay(RELAY_BIN, db_name("mongos_nsstate_%s" % RUN), [], "r-ns-" + RUN,
                  ["--namespace", db_name("mongos_ns*_%s.things" % RUN)])
    try:
        check(relay.wait_log("through one cluster stream", 30), "no cluster stream")
        check(relay.wait_log("change stream open", 30), "no stream through mongos")
        after = write(db_b, "pb", 10, 60)
        db_c = db_name("mongos_nsc_%s" % RUN)  # unsharded, made while the relay runs
        later = write(db_c, "pc", 5, 20)
        verify(dict(before, **dict(after, **later)), sub)
        for coll in (coll_a, coll_b, client[db_c]["things"]):
            check(wait_cleared(coll), "not cleared: %s" % coll.full_name)
        check(relay.stop() == 0, "relay did not exit 0")
    finally:
        relay.stop()
        sub.close()


def refused(test, key, coll_name, extra):
    dbname = db_name("mongos_%s_%s" % (test, RUN))
    client.admin.command("enableSharding", dbname)
    client.admin.command("shardCollection", "%s.%s" % (dbname, coll_name), key=key)
    r = subprocess.run([RELAY_BIN, "--mongodb-uri", MONGO_URI, "--database", dbname,
                        "--collection", "things", "--mqtt-uri", os.environ["OUTBOX_TEST_MQTT_URI"],
                        "--name", "refused"] + extra, capture_output=True, text=True,
                       timeout=30, env=dict(os.environ, MONGOC_DISABLE_SHM="1"))
    return r.returncode, r.stdout + r.stderr, dbname


def test_sharded_state_and_lease_collections_refused():
    rc, out, db = refused("state", {"_id": "hashed"}, "outbox_relay_state", [])
    check(rc == 78 and "%s.outbox_relay_state is sharded" % db in out, (rc, out[-1500:]))
    rc, out, db = refused("lease", {"relay": 1, "_id": 1}, "leases",
                          ["--lease-collection", "leases"])
    check(rc == 78 and "lease collection %s.leases is sharded" % db in out, (rc, out[-1500:]))


TESTS = [needing("shards>=2")(t) for t in (
    test_hashed_id_one_relay, test_compound_key_one_relay,
    test_dead_letters_and_admin_compound_key, test_group_of_three_compound_key,
    test_sharded_state_and_lease_collections_refused, test_tenants_cluster_stream)]

if __name__ == "__main__":
    sys.exit(run_tests("relay-mongos", TESTS, set(sys.argv[4:])))
