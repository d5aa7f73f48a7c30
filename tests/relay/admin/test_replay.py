#!/usr/bin/python3
# Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
"""outbox-admin replay and the archive's set-up, as an operator meets them: usage errors
refused before anything connects, an entity's lives replayed one after the other, replays
that never share a client id, the broker's Receive Maximum respected; ensure-schema that
never puts the archive contract on an outbox collection, archive indexes created one by one
(an operator's equivalent index adopted), and a TTL that is not in force reported by
ensure-schema, status, the relay's gauge and /healthz.

usage: test_replay.py OUTBOX_ADMIN OUTBOX_RELAY [TEST_NAME ...]   (under with-servers)
"""

import datetime
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from relaytest import db_name  # noqa: E402 (the run's database names)
from relaytest import (MONGO_URI, MQTT_URI, WORKDIR, Broker, Entities, Relay,  # noqa: E402
                       Subscriber, free_port, metric, pymongo, run_tests, wait_until)
from bson.int64 import Int64  # noqa: E402

ADMIN_BIN = sys.argv[1] if len(sys.argv) > 1 else "outbox-admin"
RELAY_BIN = sys.argv[2] if len(sys.argv) > 2 else "outbox-relay"
RUN = "%d" % os.getpid()
client = pymongo.MongoClient(MONGO_URI) if MONGO_URI else None
# Nothing listens there: a command that connects fails with 69/78, never 64.
DEAD_MONGO = "mongodb://127.0.0.1:9/?serverSelectionTimeoutMS=300"
DEAD_MQTT = "tcp://127.0.0.1:9"


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def run(*args, timeout=60):
    return subprocess.run([ADMIN_BIN] + list(args), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=timeout, text=True)


def admin(dbname, cname, archive, *args, mqtt=None):
    return run("--mongodb-uri", MONGO_URI, "--database", dbname, "--collection", cname,
               "--archive-collection", archive, "--mqtt-uri", mqtt or MQTT_URI, *args)


def entry(cname, entity, seq, published, etype="Changed"):
    """An archive entry as the relay writes it (outbox/archive.h)."""
    return {"_id": str(uuid.uuid4()), "collection": cname, "entityId": entity,
            "seq": Int64(seq), "type": etype, "time": published, "data": {"n": seq},
            "publishedAt": published, "relay": "r"}


def test_usage_errors_before_connecting():
    """Every malformed --since/--until/--older-than/--max-age, a reversed range and a bad
    --rate exit 64 with a message naming the option, with MongoDB and the broker unreachable
    (so nothing was tried first); a '$' topic is refused as the relay refuses it (78)."""
    base = ["--mongodb-uri", DEAD_MONGO, "--database", "d", "--collection", "c",
            "--archive-collection", "arch", "--mqtt-uri", DEAD_MQTT]
    cases = [(["replay", "--since", "nan"], "--since"),
             (["replay", "--until", "-nan"], "--until"),
             (["replay", "--since", "inf"], "--since"),
             (["replay", "--since", " 2h"], "--since"),
             (["replay", "--since", "2026-02-31T00:00:00Z"], "--since"),
             (["replay", "--since", "2026-13-01T00:00:00Z"], "--since"),
             (["replay", "--since", " 2026-02-01T00:00:00Z"], "--since"),
             (["replay", "--since", "200000000000d"], "--since"),
             (["replay", "--since", "2026-03-01T00:00:00Z", "--until",
               "2026-02-01T00:00:00Z"], "reversed"),
             (["replay", "--since", "1h", "--until", "2h"], "reversed"),
             (["replay", "--rate", " 5"], "--rate"),
             (["pending", "--older-than", "200000000000d"], "--older-than"),
             (["status", "--max-age", "1e400s"], "--max-age"),
             (["status", "--max-age", "nan"], "--max-age")]
    for args, want in cases:
        out = run(*(base + args), timeout=20)
        check(out.returncode == 64 and want in out.stderr,
              "%s: exit %d, %r (want 64 naming %s)" % (args, out.returncode, out.stderr, want))
    out = run(*(base + ["replay", "--topic", "$SYS/replayed/{id}"]), timeout=20)
    check(out.returncode == 78 and "starts with '$'" in out.stderr,
          "$SYS topic: exit %d, %r" % (out.returncode, out.stderr))
    good = run(*(base + ["replay", "--since", "2024-02-29T00:00:00.5Z", "--until", "1h"]),
               timeout=20)
    check(good.returncode in (69, 78) and "MongoDB" in good.stderr,
          "a valid window did not get as far as connecting: %d %r" %
          (good.returncode, good.stderr))


def test_lives_replayed_oldest_first():
    """An entity deleted and created again (seqs restart at 1) is replayed life by life,
    oldest first; an entity of one life stays in seq order even when its publishedAt times
    disagree (group members' clocks)."""
    dbname, cname, arch = db_name("replay_lives_%s" % RUN), "things", "archive"
    t0 = datetime.datetime.utcnow().replace(microsecond=0) - datetime.timedelta(hours=1)
    sec = datetime.timedelta(seconds=1)
    old = [entry(cname, "e", s, t0 + s * sec) for s in (1, 2, 3)]
    new = [entry(cname, "e", s, t0 + (60 + s) * sec) for s in (1, 2)]
    skewed = [entry(cname, "f", 1, t0 + 5 * sec), entry(cname, "f", 2, t0 + 2 * sec)]
    client[dbname][arch].insert_many(new + skewed + old)
    sub = Subscriber("lives-%s/#" % RUN)
    try:
        out = admin(dbname, cname, arch, "replay", "--topic", "lives-%s/{id}" % RUN, "--json")
        check(out.returncode == 0, "replay: %s %s" % (out.stdout, out.stderr))
        check(wait_until(lambda: sub.count() >= 7, 20), "only %d replayed" % sub.count())
        got = {}
        for topic, payload, _ in sub.snapshot():
            got.setdefault(topic.split("/")[-1], []).append(json.loads(payload)["id"])
        want_e = [x["_id"] for x in old + new]
        check(got.get("e") == want_e,
              "e replayed as %s, want old life then new life %s" % (got.get("e"), want_e))
        check(got.get("f") == [x["_id"] for x in skewed], "f out of seq order: %s" % got.get("f"))
    finally:
        sub.close()


def fill_archive(dbname, cname, arch, n):
    t0 = datetime.datetime.utcnow().replace(microsecond=0) - datetime.timedelta(hours=1)
    client[dbname][arch].insert_many([entry(cname, "e%d" % (i % 50), i // 50 + 1, t0)
                                      for i in range(n)])


def pid1(args):
    """@args run as pid 1 of a PID namespace of its own (as in a Kubernetes Job), or None
    when this machine does not allow one."""
    return ["unshare", "--pid", "--fork", "--"] + args


def unshare_works():
    try:
        out = subprocess.run(pid1(["sh", "-c", "echo $$"]), stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, timeout=10, text=True)
        return out.returncode == 0 and out.stdout.strip() == "1"
    except (OSError, subprocess.TimeoutExpired):
        return False


def test_concurrent_replays_in_pid_namespaces():
    """Two replays that are both pid 1 (separate PID namespaces) run at once: each publishes
    all of its events (a shared client id made the broker take one's session over: exit 69
    part way). Each says the client id it uses."""
    dbname, cname, arch = db_name("replay_ids_%s" % RUN), "things", "archive"
    fill_archive(dbname, cname, arch, 400)
    args = [ADMIN_BIN, "--mongodb-uri", MONGO_URI, "--database", dbname, "--collection", cname,
            "--archive-collection", arch, "--mqtt-uri", MQTT_URI, "replay", "--json",
            "--rate", "400", "--topic", "ids-%s/{id}" % RUN]
    wrap = pid1 if unshare_works() else (lambda a: a)
    procs = [subprocess.Popen(wrap(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for _ in range(2)]
    outs = [p.communicate(timeout=60) for p in procs]
    ids = []
    for p, (out, err) in zip(procs, outs):
        check(p.returncode == 0 and json.loads(out)["replayed"] == 400,
              "replay: exit %d %s %s" % (p.returncode, out, err))
        said = [ln for ln in err.splitlines() if "as client id" in ln]
        check(len(said) == 1, "no client id line: %r" % err)
        ids.append(said[0].split("'")[1])
    check(ids[0] != ids[1] and all(len(i) == len("outbox-admin-replay-") + 8 for i in ids),
          "client ids %s" % ids)
    if wrap is not pid1:
        print("note: unshare --pid not allowed here; ran the replays without PID namespaces")


def test_receive_maximum_respected():
    """replay keeps at most the broker's Receive Maximum in flight, as the relay does
    (mosquitto's default: 20; above it paho 1.3.12 stalls up to 1 s at a time)."""
    dbname, cname, arch = db_name("replay_rm_%s" % RUN), "things", "archive"
    fill_archive(dbname, cname, arch, 300)
    out = admin(dbname, cname, arch, "replay", "--json", "--topic", "rm-%s/{id}" % RUN)
    check(out.returncode == 0, "replay: %s %s" % (out.stdout, out.stderr))
    doc = json.loads(out.stdout)
    check(doc["replayed"] == 300 and doc.get("inflightWindow") == 20, "replay: %s" % doc)
    broker = Broker("rm100-%s" % RUN, extra="max_inflight_messages 100\n")
    try:
        out = admin(dbname, cname, arch, "replay", "--json", "--topic", "rm-%s/{id}" % RUN,
                    mqtt=broker.uri)
        doc = json.loads(out.stdout)
        check(out.returncode == 0 and doc.get("inflightWindow") == 100, "replay: %s %s" %
              (out.stdout, out.stderr))
        out = admin(dbname, cname, arch, "replay", "--json", "--topic", "rm-%s/{id}" % RUN,
                    "--inflight-window", "8", mqtt=broker.uri)
        check(out.returncode == 0 and json.loads(out.stdout).get("inflightWindow") == 8,
              "replay --inflight-window 8: %s %s" % (out.stdout, out.stderr))
    finally:
        broker.close()


def validator_of(dbname, name):
    for info in client[dbname].list_collections(filter={"name": name}):
        return info.get("options", {}).get("validator")
    return None


def test_ensure_schema_never_targets_an_outbox_collection():
    """-c relay.json --collection things --archive-collection orders, where orders is another
    outbox collection of the config: refused (78) as the relay refuses it, orders untouched."""
    dbname = db_name("replay_target_%s" % RUN)
    client[dbname]["orders"].insert_one({"_id": "o1", "version": Int64(1),
                                         "eventSeq": Int64(0), "events": []})
    conf = os.path.join(WORKDIR, "relay-target-%s.json" % RUN)
    with open(conf, "w") as f:
        json.dump({"mongodb-uri": MONGO_URI, "database": dbname,
                   "collection": ["things", "orders"], "mqtt-uri": MQTT_URI}, f)
    for target in ("orders", "outbox_relay_state"):
        out = run("-c", conf, "--collection", "things", "--archive-collection", target,
                  "ensure-schema")
        check(out.returncode == 78, "%s: exit %d %s %s" % (target, out.returncode, out.stdout,
                                                          out.stderr))
    check(validator_of(dbname, "orders") is None, "orders got a validator")


def indexes(dbname, name):
    return {ix["name"]: ix for ix in client[dbname][name].list_indexes()}


def healthz(port):
    try:
        return urllib.request.urlopen("http://127.0.0.1:%d/healthz" % port, timeout=5).read()
    except urllib.error.HTTPError as e:
        return e.read()


def test_archive_indexes_one_by_one():
    """An operator's {time: 1} under another name is adopted, the other indexes and the TTL
    are created. An operator's {publishedAt: 1} without a TTL stands in the way of the TTL:
    ensure-schema says so (65) and creates the rest, status warns, the relay's gauge
    outbox_relay_archive_ttl_missing is 1 and /healthz says so (staying 200)."""
    dbname, cname = db_name("replay_ix_%s" % RUN), "things"
    client[dbname]["arch1"].create_index([("time", 1)], name="my_time")
    out = admin(dbname, cname, "arch1", "ensure-schema", "--archive-ttl", "30d")
    check(out.returncode == 0, "ensure-schema: %d %s %s" % (out.returncode, out.stdout,
                                                            out.stderr))
    ix = indexes(dbname, "arch1")
    check("my_time" in ix and "outbox_archive_time" not in ix, "time index: %s" % list(ix))
    check("outbox_archive_entity" in ix and "outbox_archive_type" in ix, "indexes: %s" % list(ix))
    check(ix.get("outbox_archive_ttl", {}).get("expireAfterSeconds") == 30 * 86400,
          "TTL: %s" % ix.get("outbox_archive_ttl"))

    client[dbname]["arch2"].create_index([("publishedAt", 1)], name="my_pub")
    out = admin(dbname, cname, "arch2", "ensure-schema", "--archive-ttl", "1d")
    check(out.returncode == 65 and "my_pub" in out.stderr, "ensure-schema: %d %s" %
          (out.returncode, out.stderr))
    ix = indexes(dbname, "arch2")
    check({"outbox_archive_time", "outbox_archive_entity", "outbox_archive_type"} <= set(ix),
          "the other indexes: %s" % list(ix))
    st = admin(dbname, cname, "arch2", "status", "--json", "--archive-ttl", "1d")
    doc = json.loads(st.stdout)["archive"]
    check(st.returncode == 0 and doc["ttlMissing"] is True and doc["ttlSeconds"] == 0 and
          "not in force" in st.stderr, "status: %s %s" % (st.stdout, st.stderr))

    port = free_port()
    ents = Entities(client[dbname][cname])
    relay = Relay(RELAY_BIN, dbname, [cname], "ttl-%s" % RUN,
                  extra=["--archive-collection", "arch2", "--archive-ttl", "1d",
                         "--metrics-listen", "127.0.0.1:%d" % port])
    try:
        check(relay.wait_log("change stream open"), "relay did not open its stream")
        ents.create("a", 2)
        check(wait_until(lambda: metric(port, "outbox_relay_archive_ttl_missing") == 1, 30),
              "gauge: %s" % metric(port, "outbox_relay_archive_ttl_missing"))
        body = healthz(port).decode()
        check(body.startswith("ok") and "--archive-ttl not in force" in body,
              "/healthz: %r" % body)
        client[dbname]["arch2"].drop_index("my_pub")
        client[dbname]["arch2"].create_index([("publishedAt", 1)], name="my_pub",
                                             expireAfterSeconds=86400)
        ents.append("a", 1)
        check(wait_until(lambda: ents.pending() == 0, 30), "events not cleared")
        check(relay.stop() == 0, "relay did not exit 0")
    finally:
        relay.stop()
    st = admin(dbname, cname, "arch2", "status", "--json", "--archive-ttl", "1d")
    doc = json.loads(st.stdout)["archive"]
    check(doc["ttlMissing"] is False and doc["ttlSeconds"] == 86400,
          "status once the operator's index has the TTL: %s" % doc)


TESTS = [test_usage_errors_before_connecting, test_lives_replayed_oldest_first,
         test_concurrent_replays_in_pid_namespaces, test_receive_maximum_respected,
         test_ensure_schema_never_targets_an_outbox_collection, test_archive_indexes_one_by_one]


def cleanup():
    if client:
        for name in client.list_database_names():
            if name.startswith("replay_") and name.endswith("_" + RUN):
                client.drop_database(name)


if __name__ == "__main__":
    sys.exit(run_tests("admin-replay", TESTS, set(sys.argv[3:]), cleanup=cleanup))
