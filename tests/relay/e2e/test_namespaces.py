#!/usr/bin/python3
# Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
"""Many tenants (issue 37): --namespace patterns served through one change stream. Patterns
that span databases (a cluster stream) and name one (a database stream); pending events of
tenants that existed before the start (swept after listing) and of tenants created while
the relay runs; the same _id in two tenants; {db} and {collection} in the topic; collections
and databases dropped while running; refusals at start.

usage: test_namespaces.py OUTBOX_RELAY OUTBOX_ADMIN [TEST_NAME ...]   (run under tests/fixtures/with-servers)
"""

import json
import os
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from relaytest import (MONGO_URI, MQTT_URI, Entities, Relay, Subscriber, db_name,  # noqa: E402
                       free_port, pymongo, run_tests, wait_until)

RELAY_BIN = sys.argv[1] if len(sys.argv) > 1 else "outbox-relay"
ADMIN_BIN = sys.argv[2] if len(sys.argv) > 2 else "outbox-admin"
RUN = "%d" % os.getpid()
client = pymongo.MongoClient(MONGO_URI) if MONGO_URI else None
TOPIC = "ns%s/{db}/{collection}/{id}" % RUN


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def relay(name, patterns, extra=()):
    """A relay given only --namespace patterns (Relay adds --database: the state database)."""
    args = []
    for p in patterns:
        args += ["--namespace", p]
    args += ["--topic", TOPIC] + list(extra)
    return Relay(RELAY_BIN, db_name("nsstate_%s" % RUN), [], name, args)


def topics(sub):
    return sorted(t for t, _, _ in sub.snapshot())


def pending(coll):
    return sum(len(d.get("events", [])) for d in coll.find())


def drop_all(prefix):
    for db in client.list_database_names():
        if db.startswith(prefix):
            client.drop_database(db)


def test_tenants_across_databases():
    """Tenants of two databases before the start (swept), one created while running (taken
    from the cluster stream), the same _id in each, and a collection the patterns skip."""
    pre = db_name("nsa%s_" % RUN)
    t1 = Entities(client[pre + "t1"]["contacts"])
    t2 = Entities(client[pre + "t2"]["contacts"])
    other = Entities(client[pre + "t1"]["other"])
    t1.create("c42", 2)
    t2.create("c42", 1)
    other.create("x", 1)
    sub = Subscriber("ns%s/#" % RUN)
    r = relay("nsa-" + RUN, [pre + "*.contacts"])
    try:
        check(r.wait_log("through one cluster stream"), "no cluster stream: " + r.log_text())
        check(wait_until(lambda: sub.count() >= 3, 30), "swept: %s" % topics(sub))
        want = (["ns%s/%st1/contacts/c42" % (RUN, pre)] * 2 +
                ["ns%s/%st2/contacts/c42" % (RUN, pre)])
        check(topics(sub) == sorted(want), "topics %s" % topics(sub))
        # A tenant created while the relay runs, no restart.
        t3 = Entities(client[pre + "t3"]["contacts"])
        t3.create("a", 1)
        t1.append("c42", 1)
        check(wait_until(lambda: sub.count() >= 5, 20), "new tenant: %s" % topics(sub))
        check("ns%s/%st3/contacts/a" % (RUN, pre) in topics(sub), "t3 missing: %s" % topics(sub))
        check(wait_until(lambda: pending(t3.coll) == 0 and pending(t1.coll) == 0, 20),
              "not cleared")
        check(pending(other.coll) == 1, "a collection the patterns skip was published")
        source = [json.loads(p)["source"] for t, p, _ in sub.snapshot()
                  if t.startswith("ns%s/%st2/" % (RUN, pre))]
        check(source == ["/%st2/contacts" % pre], "source %s" % source)
        check(r.proc.poll() is None, "relay exited")
    finally:
        rc = r.stop()
        sub.close()
        drop_all(pre)
    check(rc == 0, "exit status %s" % rc)


def test_drops_while_running():
    """A watched collection dropped and a watched database dropped while the cluster stream
    runs: forgotten, the relay goes on serving the others, and a tenant made again under a
    dropped name is served again."""
    pre = db_name("nsd%s_" % RUN)
    a = Entities(client[pre + "a"]["orders"])
    b = Entities(client[pre + "b"]["orders"])
    a.create(1, 1)
    b.create(1, 1)
    sub = Subscriber("ns%s/#" % RUN)
    r = relay("nsd-" + RUN, [pre + "*.orders"])
    try:
        check(wait_until(lambda: sub.count() >= 2, 30), "first events: %s" % topics(sub))
        a.coll.drop()
        check(r.wait_log("drop %sa.orders: 1 watched namespace(s) forgotten" % pre),
              "drop not seen: " + r.log_text()[-2000:])
        client.drop_database(pre + "b")
        # A cluster stream shows the collection's drop, then the dropDatabase.
        check(r.wait_log("dropDatabase %sb: " % pre), "dropDatabase not seen")
        check("%sb.orders: 1 watched" % pre in r.log_text(), "drop before dropDatabase")
        c = Entities(client[pre + "c"]["orders"])
        c.create(1, 1)
        b2 = Entities(client[pre + "b"]["orders"])
        b2.create(2, 1)
        check(wait_until(lambda: sub.count() >= 4, 20), "after drops: %s" % topics(sub))
        check(r.proc.poll() is None, "relay exited")
    finally:
        rc = r.stop()
        sub.close()
        drop_all(pre)
    check(rc == 0, "exit status %s" % rc)


def test_one_database_stream_survives_drop_database():
    """Patterns of one database: a database stream. Its dropDatabase invalidates the stream;
    the relay sweeps, starts again and serves the database when it is made again."""
    db = db_name("nss%s" % RUN)
    a = Entities(client[db]["t_1"])
    a.create("p", 1)
    sub = Subscriber("ns%s/#" % RUN)
    r = Relay(RELAY_BIN, db, [], "nss-" + RUN, ["--namespace", db + ".t_*", "--topic", TOPIC])
    try:
        check(r.wait_log("through one database stream on " + db), "no database stream")
        check(wait_until(lambda: sub.count() >= 1, 30), "first: %s" % topics(sub))
        client.drop_database(db)
        time.sleep(0.5)
        b = Entities(client[db]["t_2"])
        b.create("q", 1)
        check(wait_until(lambda: sub.count() >= 2, 30), "after dropDatabase: %s" % topics(sub))
        check("ns%s/%s/t_2/q" % (RUN, db) in topics(sub), "t_2: %s" % topics(sub))
        check(r.proc.poll() is None, "relay exited")
    finally:
        rc = r.stop()
        sub.close()
        client.drop_database(db)
    check(rc == 0, "exit status %s" % rc)


def series(port, name):
    """{label: value} of a per-collection series on a relay's /metrics."""
    try:
        text = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=5).read()
    except OSError:
        return {}
    return {line.split('collection="')[1].split('"')[0]: float(line.split()[-1])
            for line in text.decode().splitlines() if line.startswith(name + "{")}


def test_many_namespaces_swept():
    """40 collections in 8 databases with pending events before the start: the listing and
    the sweep find every one (and create the partial index on each); the metrics keep one
    series for the pattern, not one per tenant, and its pending gauge sums them all."""
    pre = db_name("nsm%s_" % RUN)
    colls = [client["%s%d" % (pre, d)]["c%d" % c] for d in range(8) for c in range(5)]
    for i, coll in enumerate(colls):
        Entities(coll).create(i, 1)
    sub = Subscriber("ns%s/#" % RUN)
    port = free_port()
    r = relay("nsm-" + RUN, [pre + "*.c*"], ["--metrics-listen", "127.0.0.1:%d" % port,
                                            "--pending-scan-interval-ms", "200"])
    try:
        labels = {}
        check(wait_until(lambda: labels.update(series(port, "outbox_relay_stored_pending_events"))
                         or labels, 20), "no pending gauge")
        check(list(labels) == [pre + "*.c*"], "series %s" % sorted(labels))
        check(wait_until(lambda: sub.count() >= len(colls), 40),
              "swept %d of %d" % (sub.count(), len(colls)))
        check(wait_until(lambda: all(pending(c) == 0 for c in colls), 20), "not cleared")
        check(all("outbox_pending" in c.index_information() for c in colls), "index missing")
        check(len(set(topics(sub))) == len(colls), "duplicates or misses: %s" % topics(sub))
        check(wait_until(lambda: series(port, "outbox_relay_stored_pending_events").get(
            pre + "*.c*") == 0, 20), "pending gauge %s" % series(
                port, "outbox_relay_stored_pending_events"))
        # Dead letters (the relay leaves them alone) in two tenants: one series, their sum.
        for coll, n in ((colls[7], 1), (colls[30], 2)):
            coll.insert_one({"_id": "dl", "version": 1, "eventSeq": n, "events": [],
                             "deadLetters": [{"event": {"id": "x%d" % i, "seq": i + 1},
                                              "reason": "r", "at": 0, "relay": "t"}
                                             for i in range(n)]})
        check(wait_until(lambda: series(port, "outbox_relay_stored_dead_letters") ==
                         {pre + "*.c*": 3}, 20),
              "dead letters %s" % series(port, "outbox_relay_stored_dead_letters"))
    finally:
        rc = r.stop()
        sub.close()
        drop_all(pre)
    check(rc == 0, "exit status %s" % rc)


def test_nothing_matches_at_start():
    """A pattern nothing matches yet: the relay starts (an empty sweep), watches, and serves
    the first tenant created."""
    pre = db_name("nsz%s_" % RUN)
    sub = Subscriber("ns%s/#" % RUN)
    r = relay("nsz-" + RUN, [pre + "*.orders"])
    try:
        check(r.wait_log("change stream open"), "no stream: " + r.log_text()[-2000:])
        Entities(client[pre + "first"]["orders"]).create("o1", 2)
        check(wait_until(lambda: sub.count() >= 2, 20), "first tenant: %s" % topics(sub))
        check(r.proc.poll() is None, "relay exited")
    finally:
        rc = r.stop()
        sub.close()
        drop_all(pre)
    check(rc == 0, "exit status %s" % rc)


def test_rename_into_a_watched_name():
    """A collection renamed into a watched name (as an aggregation's $out does): its pending
    events never showed as inserts; the relay sweeps and publishes them. A watched one renamed
    away is forgotten."""
    pre = db_name("nsr%s_" % RUN)
    staging = Entities(client[pre + "a"]["staging"])
    staging.create("s1", 2)
    Entities(client[pre + "a"]["orders"]).create("o1", 1)
    sub = Subscriber("ns%s/#" % RUN)
    r = relay("nsr-" + RUN, [pre + "*.orders"])
    try:
        check(wait_until(lambda: sub.count() >= 1, 20), "first: %s" % topics(sub))
        client[pre + "a"]["orders"].rename("old_orders")
        check(r.wait_log("rename %sa.orders: 1 watched namespace(s) forgotten" % pre),
              "renamed away not forgotten")
        client[pre + "a"]["staging"].rename("orders")
        check(r.wait_log("rename into %sa.orders, a watched namespace" % pre), "no sweep")
        check(wait_until(lambda: sub.count() >= 3, 20), "renamed in: %s" % topics(sub))
        check("ns%s/%sa/orders/s1" % (RUN, pre) in topics(sub), "topics %s" % topics(sub))
        check(wait_until(lambda: pending(client[pre + "a"]["orders"]) == 0, 20), "not cleared")
        check(r.proc.poll() is None, "relay exited")
    finally:
        rc = r.stop()
        sub.close()
        drop_all(pre)
    check(rc == 0, "exit status %s" % rc)


def start_refused(args):
    base = [RELAY_BIN, "--mongodb-uri", MONGO_URI, "--mqtt-uri", MQTT_URI]
    p = subprocess.run(base + args, capture_output=True, text=True, timeout=30)
    return p.returncode, p.stderr


def test_refusals():
    rc, err = start_refused(["--namespace", "admin.*"])
    check(rc == 64 and "never watched" in err, "admin: %d %s" % (rc, err))
    rc, err = start_refused(["--namespace", "a.*", "--namespace", "b.*"])
    check(rc == 78 and "--state-database" in err, "span: %d %s" % (rc, err))
    rc, err = start_refused(["--namespace", "app.*", "--namespace", "app.outbox_relay_state"])
    check(rc == 78 and "relay's own" in err, "own: %d %s" % (rc, err))
    env = dict(os.environ, OUTBOX_NAMESPACES="shop.system.views")
    p = subprocess.run([RELAY_BIN, "--mongodb-uri", MONGO_URI, "--mqtt-uri", MQTT_URI],
                       capture_output=True, text=True, timeout=30, env=env)
    check(p.returncode == 78 and "never watched" in p.stderr, "env: %d %s" % (p.returncode,
                                                                              p.stderr))


def admin(*args):
    p = subprocess.run([ADMIN_BIN] + list(args), capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, OUTBOX_MONGODB_URI=MONGO_URI))
    return p.returncode, p.stdout, p.stderr


def test_admin_per_pattern():
    """outbox-admin with the relay's patterns: status per namespace (the most pending first,
    --top, totals, JSON), pending, requeue of a dead letter in another database,
    ensure-schema on every match."""
    pre = db_name("nsadm%s_" % RUN)
    pat = ["--namespace", pre + "*.orders", "--state-database", db_name("nsstate_" + RUN)]
    ents = [Entities(client["%s%d" % (pre, i)]["orders"]) for i in range(3)]
    for i, e in enumerate(ents):
        e.create("e", i + 1)
    Entities(client[pre + "0"]["skipped"]).create("s", 5)
    ev = ents[1].coll.find_one({"_id": "e"})["events"][0]
    ents[1].coll.update_one({"_id": "e"}, {"$pull": {"events": {"id": ev["id"]}},
                                           "$push": {"deadLetters": {"event": ev, "reason": "x",
                                                                     "at": ev["time"],
                                                                     "relay": "t"}}})
    try:
        rc, out, err = admin("status", "--json", "--top", "2", *pat)
        check(rc == 0, "status: %d %s" % (rc, err))
        st = json.loads(out)
        names = [c["name"] for c in st["collections"]]
        # 3, 1 (+1 dead letter), 1 pending: ties go to the one with dead letters.
        check(names == ["%s2.orders" % pre, "%s1.orders" % pre], "top 2: %s" % names)
        t = st["totals"]
        check(t["namespaces"] == 3 and t["pendingEvents"] == 5 and t["deadLetters"] == 1,
              "totals %s" % t)
        rc, out, err = admin("status", *pat)
        check(rc == 0 and "TOTAL(3 namespaces)" in out, "text status: %s %s" % (out, err))
        rc, out, err = admin("pending", "--json", *pat)
        check(rc == 0 and len(out.splitlines()) == 5, "pending: %s %s" % (out, err))
        check("skipped" not in out, "a collection the pattern skips was listed")
        rc, out, err = admin("requeue", "--all", *pat)
        check(rc == 0 and "%s1.orders" % pre in out, "requeue: %d %s %s" % (rc, out, err))
        check(len(ents[1].coll.find_one({"_id": "e"})["events"]) == 2, "not requeued")
        rc, out, err = admin("ensure-schema", *pat)
        check(rc == 0, "ensure-schema: %d %s" % (rc, err))
        for e in ents:
            opts = e.coll.options()
            check("validator" in opts, "no validator on %s" % e.coll.full_name)
        check("validator" not in client[pre + "0"]["skipped"].options(), "skipped got one")
    finally:
        drop_all(pre)


def test_archive_and_replay_across_databases():
    """With --archive-collection the archive (in the state database) names a tenant's
    namespace db.coll, so two tenants' same-named collections stay apart, and outbox-admin
    replay with the same patterns publishes each to its real {db}/{collection}."""
    pre = db_name("nsarc%s_" % RUN)
    state = db_name("nsarcstate_%s" % RUN)
    for t in ("a", "b"):
        Entities(client[pre + t]["orders"]).create("same", 2)
    sub = Subscriber("ns%s/#" % RUN)
    r = relay("nsarc-" + RUN, [pre + "*.orders"],
              ["--archive-collection", "archive", "--state-database", state])
    try:
        check(wait_until(lambda: client[state]["archive"].count_documents({}) == 4, 30),
              "archived %d" % client[state]["archive"].count_documents({}))
        names = sorted(client[state]["archive"].distinct("collection"))
        check(names == ["%sa.orders" % pre, "%sb.orders" % pre], "archive names %s" % names)
    finally:
        rc = r.stop()
        sub.close()
    replayed = Subscriber("rp%s/#" % RUN)
    try:
        code, out, err = admin("replay", "--namespace", pre + "*.orders", "--state-database",
                               state, "--archive-collection", "archive", "--mqtt-uri",
                               MQTT_URI, "--topic", "rp%s/{db}/{collection}/{id}" % RUN,
                               "--json")
        check(code == 0, "replay: %d %s %s" % (code, out, err))
        check(wait_until(lambda: replayed.count() >= 4, 20), "replayed %d" % replayed.count())
        want = sorted(["rp%s/%s%s/orders/same" % (RUN, pre, t) for t in "aabb"])
        check(topics(replayed) == want, "replay topics %s" % topics(replayed))
    finally:
        replayed.close()
        drop_all(pre)
        client.drop_database(state)
    check(rc == 0, "exit status %s" % rc)


TESTS = [test_rename_into_a_watched_name, test_nothing_matches_at_start, test_archive_and_replay_across_databases, test_admin_per_pattern, test_refusals, test_tenants_across_databases, test_drops_while_running,
         test_one_database_stream_survives_drop_database, test_many_namespaces_swept]

if __name__ == "__main__":
    sys.exit(run_tests("relay-namespaces", TESTS, sys.argv[3:]))
