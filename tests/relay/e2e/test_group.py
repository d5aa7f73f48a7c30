#!/usr/bin/python3
# Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
"""Relay groups end to end: several outbox-relay processes with one --name share the
partitions through leases in MongoDB. Real mosquitto, the MongoDB test server (or a real
replica set through OUTBOX_TEST_MONGODB_URI), load written with pymongo following the stored
contract, and a verifying subscriber: every committed event delivered (lost=0), first
deliveries of each entity in seq order, duplicates bounded. Each member reaches the broker
through a tapping proxy (tests/fixtures/tcpproxy.py) that counts its PUBLISH packets, and,
where a test cuts it off, reaches MongoDB through one too.

Lease times are short (ttl 3 s, renew 0.5 s, margin 1 s) so the suite stays fast.

usage: test_group.py OUTBOX_RELAY [TEST_NAME ...]   (run under tests/fixtures/with-servers)
"""

import datetime
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from grouptest import (MARGIN, MONGO_URI, TTL, WORKDIR, Entities, Group, Load,  # noqa: E402
                       Member, TimedSubscriber, bson, event, key_of, partition_of, pending,
                       pymongo, verify, wait_all_delivered, wait_until)
from relaytest import db_name, requires, run_tests  # noqa: E402 (on the path grouptest set)

RELAY_BIN = sys.argv[1] if len(sys.argv) > 1 else "outbox-relay"
RUN = "%d" % os.getpid()
client = pymongo.MongoClient(MONGO_URI) if MONGO_URI else None


def names(test):
    return db_name("group_%s_%s" % (test, RUN)), "things", "grp-%s-%s" % (test, RUN)


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def report(name, figures, extra=""):
    print("  %s: lost=%d out_of_order=%d duplicates=%d delivered=%d%s" %
          (name, figures["lost"], figures["out_of_order"], figures["duplicates"],
           figures["delivered"], extra), flush=True)


def check_clean(figures, max_duplicates=None):
    check(figures["lost"] == 0, "%d events lost, e.g. %s" % (figures["lost"],
                                                           figures["lost_ids"]))
    check(figures["out_of_order"] == 0, "%d first deliveries out of order" %
          figures["out_of_order"])
    if max_duplicates is not None:
        check(figures["duplicates"] <= max_duplicates,
              "%d duplicates (at most %d expected)" % (figures["duplicates"], max_duplicates))


def finish(load, sub, coll, members, timeout=90):
    """Stops the load, waits until everything is delivered and cleared, verifies."""
    load.stop()
    check(wait_all_delivered(load.committed, sub, timeout),
          "not everything was delivered within %d s" % timeout)
    check(wait_until(lambda: pending(coll) == 0, 30), "%d events still pending" % pending(coll))
    time.sleep(0.5)
    return verify(load.committed, sub.snapshot())


def stop_all(members):
    for m in members:
        if not m.stopped:
            rc = m.stop()
            check(rc == 0, "member %d exited with %s" % (m.n, rc))


def no_client_id_fights():
    path = os.path.join(WORKDIR, "mosquitto.log")
    if os.path.exists(path):
        text = open(path, "rb").read().decode("utf-8", "replace")
        check("already connected" not in text, "the broker saw two clients with one id")


# ----------------------------------------------------------------------------------------------

def test_lone_member_and_refusals():
    """A lone relay owns every partition; a relay started with another --partitions for the
    same group refuses to start and says why; /healthz says active or standby."""
    dbname, cname, rname = names("lone")
    coll = client[dbname][cname]
    # A member document left by a relay killed long ago: forgotten by the group.
    ghost = {"relay": rname, "member": "ghost/1/deadbeef"}
    client[dbname]["outbox_relay_state"].insert_one(
        {"_id": ghost, "host": "ghost", "pid": 1,
         "expiresAt": datetime.datetime(2020, 1, 1), "owned": 0})
    sub = TimedSubscriber("outbox/%s/#" % cname)
    a = Member(RELAY_BIN, dbname, [cname], rname, metrics=True)
    b = None
    try:
        group = Group(client, dbname, rname)
        check(wait_until(lambda: group.counts([a]) == [32], 20), "lone member does not own all")
        check(wait_until(lambda: client[dbname]["outbox_relay_state"].find_one({"_id": ghost})
                         is None, 10), "a long dead member's document was kept")
        doc = client[dbname]["outbox_relay_state"].find_one({"_id": rname})
        check(doc and doc["partitions"] == 32 and "token" not in doc, "group document %s" % doc)
        load = Load(dbname, cname, ["l%d" % i for i in range(20)])
        time.sleep(1)
        figures = finish(load, sub, coll, [a])
        report("lone", figures)
        check_clean(figures, max_duplicates=0)
        bad = Member(RELAY_BIN, dbname, [cname], rname, ["--partitions", "16"])
        rc = bad.proc.wait(30)
        bad.kill9()
        check(rc == 78, "a different --partitions exited %s, not 78" % rc)
        check("has 32 partitions" in bad.log_text() and "--partitions 16" in bad.log_text(),
              "refusal does not say why: %s" % bad.log_text()[-500:])
        b = Member(RELAY_BIN, dbname, [cname], rname, metrics=True)
        check(wait_until(lambda: group.settled([a, b]), 30), "two members did not settle: %s" %
              group.counts([a, b]))
        no_client_id_fights()
    finally:
        stop_all([m for m in (a, b) if m])
        sub.close()


def test_standby_metrics_and_health():
    """Three members of a group of two partitions: two are active, one is a standby with no
    stream; /healthz says which (both healthy), /metrics shows the group's figures."""
    dbname, cname, rname = names("standby")
    members = [Member(RELAY_BIN, dbname, [cname], rname, ["--partitions", "2"], metrics=True)
               for _ in range(3)]
    try:
        group = Group(client, dbname, rname, n=2)
        check(wait_until(lambda: sorted(group.counts(members)) == [0, 1, 1], 30),
              "not one partition each for two members: %s" % group.counts(members))
        time.sleep(2 * 0.5 + 0.5)  # a renewal after the last move
        counts = group.counts(members)
        for m, c in zip(members, counts):
            status, body = m.http_get("/healthz")
            want = "ok: active\n" if c else "ok: standby\n"
            check(status == 200 and body == want, "member %d (%d partitions): %s %r" %
                  (m.n, c, status, body))
            status, metrics = m.http_get("/metrics")
            check("\noutbox_relay_partitions_owned %d\n" % c in metrics, "owned: %s" % c)
            check("\noutbox_relay_group_members 3\n" in metrics, "members in %s" %
                  [ln for ln in metrics.splitlines() if "group_members" in ln])
            epochs = [ln for ln in metrics.splitlines()
                      if ln.startswith("outbox_relay_lease_epoch{")]
            check(len(epochs) == c, "epoch lines: %s" % epochs)
            check("outbox_relay_lease_renew_seconds_count" in metrics, "no renew histogram")
        standby = members[counts.index(0)]
        check(standby.wait_log("standby: this member owns no partition", 1) or
              "acquired" not in standby.log_text(), "the standby still has a stream")
    finally:
        stop_all(members)


def test_migration_of_the_old_checkpoint():
    """A checkpoint document of the relay before groups ({_id: name, token}) becomes the group
    document; its token goes into every lease and the relay resumes from it."""
    dbname, cname, rname = names("migrate")
    coll = client[dbname][cname]
    ents = Entities(coll)
    with client[dbname].watch() as stream:
        ents.create("before", 1)
        # A checkpoint past a change means the old relay had published and cleared its
        # events: clear them too, and take the token once the stream has returned the clear.
        # (One try_next may or may not return the insert, through mongos not before every
        # shard has passed its time: a token past a pending event is no real checkpoint,
        # and the relay rightly never reads that event again. F18.)
        cleared = {i for ids in ents.ids.values() for i in ids}
        coll.update_one({"_id": "before"}, {"$set": {"events": []}})
        check(wait_until(lambda: (stream.try_next() or {}).get("operationType") == "update",
                         20), "the stream did not return the clear")
        token = stream.resume_token
    client[dbname]["outbox_relay_state"].insert_one({"_id": rname, "token": token})
    ents.append("before", 2)
    for i in range(5):
        ents.create("m%d" % i, 2)
    sub = TimedSubscriber("outbox/%s/#" % cname)
    a = Member(RELAY_BIN, dbname, [cname], rname)
    try:
        check(a.wait_log("migrated the checkpoint"), "no migration logged")
        check(a.wait_log("resuming from the checkpoint"), "did not resume from the token")
        wanted = {i for ids in ents.ids.values() for i in ids} - cleared
        check(wait_until(lambda: wanted <= {json.loads(p)["id"] for _, p, _ in sub.snapshot()},
                         30), "events after the migrated token were not delivered: %s" %
              (wanted - {json.loads(p)["id"] for _, p, _ in sub.snapshot()}))
        doc = client[dbname]["outbox_relay_state"].find_one({"_id": rname})
        check(doc["partitions"] == 32 and "token" not in doc and "migratedAt" in doc,
              "group document after migration: %s" % doc)
    finally:
        stop_all([a])
        sub.close()


def busy_partition(load, group, members):
    """A partition of a hot entity and its owner."""
    p = partition_of(load.hot[0])
    return p, group.owner_of(p, members)


def test_kill9_failover():
    """kill -9 of the member owning a busy partition under load: another member publishes
    that partition's events within the lease time + 2 s; nothing is lost."""
    dbname, cname, rname = names("kill9")
    coll = client[dbname][cname]
    sub = TimedSubscriber("outbox/%s/#" % cname)
    members = [Member(RELAY_BIN, dbname, [cname], rname) for _ in range(2)]
    try:
        group = Group(client, dbname, rname)
        check(wait_until(lambda: group.settled(members), 30), "did not settle: %s" %
              group.counts(members))
        load = Load(dbname, cname, ["k%d" % i for i in range(40)], hot=["hot-a", "hot-b"])
        time.sleep(1.5)
        p, victim = busy_partition(load, group, members)
        other = members[1] if victim is members[0] else members[0]
        hot_topics = {"outbox/%s/%s" % (cname, e) for e in load.hot
                      if partition_of(e) == p}
        killed_at = time.time()
        victim.kill9()
        check(wait_until(lambda: other.mqtt_proxy.publishes_since(
            killed_at, lambda t: t in hot_topics), TTL / 1000 + 10),
              "no member took over partition %d" % p)
        took = other.mqtt_proxy.publishes_since(killed_at, lambda t: t in hot_topics)[0].time
        failover = took - killed_at
        time.sleep(1)
        figures = finish(load, sub, coll, [other])
        report("kill9", figures, " failover=%.2fs (partition %d)" % (failover, p))
        check(failover <= TTL / 1000 + 2, "failover took %.2f s (lease %d ms)" % (failover, TTL))
        check_clean(figures)
    finally:
        stop_all([m for m in members if not m.stopped])
        sub.close()


def sigstop_case(pause_s, tag):
    """SIGSTOP a member for pause_s under load, then SIGCONT: after its deadline it publishes
    nothing of the partitions it lost (its PUBLISH packets are counted by its tap), its fenced
    writes change nothing, nothing is lost, first deliveries stay in order."""
    dbname, cname, rname = names("stop" + tag)
    coll = client[dbname][cname]
    sub = TimedSubscriber("outbox/%s/#" % cname)
    members = [Member(RELAY_BIN, dbname, [cname], rname) for _ in range(2)]
    a, b = members
    try:
        group = Group(client, dbname, rname)
        check(wait_until(lambda: group.settled(members), 30), "did not settle")
        load = Load(dbname, cname, ["s%d" % i for i in range(60)], hot=["hot-s1", "hot-s2"])
        time.sleep(1.5)
        before = {p: (d.get("owner"), d["epoch"]) for p, d in group.lease_docs().items()}
        mine = {p for p, (o, _) in before.items() if o and o.startswith(a.instance_prefix())}
        stopped_at = time.time()
        a.pause()
        time.sleep(pause_s)
        after = {p: (d.get("owner"), d["epoch"]) for p, d in group.lease_docs().items()}
        lost = {p for p in mine if after[p][0] and not after[p][0].startswith(a.instance_prefix())}
        resumed_at = time.time()
        a.resume()
        time.sleep(2.0)
        # Partitions taken while it was stopped: until it acquires some again (rebalancing),
        # what it sent after resuming is at most what it had handed to its MQTT client before
        # the stop (the in-flight window).
        back = a.log_time_of("acquired", resumed_at) or time.time()
        lost_topics = lambda t: partition_of(t.split("/", 2)[2]) in lost  # noqa: E731
        late = [x for x in a.mqtt_proxy.publishes_since(resumed_at, lost_topics) if x.time < back]
        now = {p: (d.get("owner"), d["epoch"]) for p, d in group.lease_docs().items()}
        for p in lost:
            owner, epoch = now[p]
            check(not (owner and owner.startswith(a.instance_prefix()) and
                       epoch == before[p][1]),
                  "partition %d: the stopped member's old epoch came back" % p)
            check(epoch >= after[p][1], "partition %d: epoch went back" % p)
        figures = finish(load, sub, coll, members)
        report("sigstop %s" % tag, figures,
               " pause=%.1fs lost_partitions=%d published_after_resume=%d" %
               (pause_s, len(lost), len(late)))
        check(len(late) <= 256, "%d publishes of lost partitions after SIGCONT" % len(late))
        if pause_s * 1000 > TTL + 1000:
            check(lost, "a pause longer than the lease lost no partition")
            check(a.wait_log("lost partition", 10), "no loss logged")
        check_clean(figures)
        check(wait_until(lambda: group.settled(members), 30), "did not settle again: %s" %
              group.counts(members))
        no_client_id_fights()
        print("  (stopped %.1f s after %.1f s of load)" % (resumed_at - stopped_at, 1.5))
    finally:
        a.resume()
        stop_all(members)
        sub.close()


def test_sigstop_longer_than_the_lease():
    sigstop_case(TTL / 1000 + 2, "long")


def test_sigstop_around_the_deadline():
    for delta in (-0.5, 0.5):
        sigstop_case((TTL - MARGIN) / 1000 + delta, "minus" if delta < 0 else "plus")


def test_cut_from_mongodb():
    """A member cut from MongoDB stops publishing before its deadline (its backlog stays
    unpublished), the other takes over after the lease expires, and once reconnected the cut
    member learns it lost its partitions and rejoins."""
    dbname, cname, rname = names("cutdb")
    coll = client[dbname][cname]
    sub = TimedSubscriber("outbox/%s/#" % cname)
    a = Member(RELAY_BIN, dbname, [cname], rname, ["--max-buffered-events", "40000"],
               mongo_proxy=True)
    b = Member(RELAY_BIN, dbname, [cname], rname)
    try:
        group = Group(client, dbname, rname)
        check(wait_until(lambda: group.settled([a, b]), 30), "did not settle")
        a_parts = [p for p, o in group.owners().items() if o and o.startswith(a.instance_prefix())]
        # A backlog on a few hot entities of a's partitions: one event in flight per entity,
        # and PUBACKs held 2 ms on their way back, keep a publishing for 6 s or more on any
        # machine (without the delay a fast one drained it before the deadline).
        a.mqtt_proxy.slow_replies(0.002)
        hot = []
        i = 0
        while len(hot) < 3:
            if partition_of("deep%d" % i) in a_parts:
                hot.append("deep%d" % i)
            i += 1
        load = Load(dbname, cname, ["c%d" % i for i in range(20)], hot=hot, hot_share=0.0)
        for eid in hot:  # the load thread never touches them (hot_share 0)
            start = load.ents.seq[eid]
            load._record(eid, load.ents.append(eid, events=[event(start + k + 1)
                                                            for k in range(3000)]))
        check(wait_until(lambda: len(a.mqtt_proxy.publishes_since(0)) > 200, 30),
              "member a is not publishing its backlog")
        cut_at = time.time()
        a.mongo_proxy.cut()
        deadline = cut_at + (TTL - MARGIN) / 1000
        time.sleep((TTL - MARGIN) / 1000 + 0.5)
        # What was handed to its MQTT client just before the deadline may reach the tap a
        # little later on a loaded machine: 0.6 s of grace, still well before the lease expires
        # (the margin is 1 s) and the other member takes over.
        after_deadline = a.mqtt_proxy.publishes_since(deadline + 0.6)
        check(wait_until(lambda: all(o and o.startswith(b.instance_prefix())
                                     for o in group.owners().values()), 15),
              "b did not take a's partitions")
        time.sleep(1)
        late = a.mqtt_proxy.publishes_since(deadline + 0.6)
        a.mongo_proxy.restore()
        check(a.wait_log("lost partition", 20), "a did not learn that it lost its partitions")
        figures = finish(load, sub, coll, [a, b])
        hot_topics = {"outbox/%s/%s" % (cname, e) for e in hot}
        by_a = {json.loads(x.payload)["id"] for x in a.mqtt_proxy.publishes_since(0)}
        left_to_b = {json.loads(x.payload)["id"] for x in b.mqtt_proxy.publishes_since(
            cut_at, lambda t: t in hot_topics)} - by_a
        report("cut from MongoDB", figures, " published_after_deadline=%d left_to_b=%d" %
               (len(late), len(left_to_b)))
        check(not after_deadline and not late,
              "a published %d messages after its deadline" % len(late))
        check(left_to_b, "a ran out of backlog before its deadline: the test proves nothing")
        check_clean(figures)
        check(wait_until(lambda: group.settled([a, b]), 30), "a did not rejoin: %s" %
              group.counts([a, b]))
    finally:
        stop_all([a, b])
        sub.close()


def test_cut_from_the_broker():
    """A member that cannot reach the broker for more than the lease time releases its
    partitions to the other, and takes its share again once it is back."""
    dbname, cname, rname = names("cutmq")
    coll = client[dbname][cname]
    sub = TimedSubscriber("outbox/%s/#" % cname)
    a = Member(RELAY_BIN, dbname, [cname], rname)
    b = Member(RELAY_BIN, dbname, [cname], rname)
    try:
        group = Group(client, dbname, rname)
        check(wait_until(lambda: group.settled([a, b]), 30), "did not settle")
        load = Load(dbname, cname, ["b%d" % i for i in range(40)])
        time.sleep(1)
        cut_at = time.time()
        a.mqtt_proxy.cut()
        check(wait_until(lambda: group.counts([a, b]) == [0, 32], TTL / 1000 + 10),
              "a kept its partitions: %s" % group.counts([a, b]))
        moved = time.time() - cut_at
        check(a.wait_log("released", 5), "a did not log the release")
        a.mqtt_proxy.restore()
        check(wait_until(lambda: group.settled([a, b]), 30), "a did not come back: %s" %
              group.counts([a, b]))
        figures = finish(load, sub, coll, [a, b])
        report("cut from the broker", figures, " released_after=%.1fs" % moved)
        check_clean(figures)
    finally:
        stop_all([a, b])
        sub.close()


def test_one_four_two():
    """1 -> 4 -> 2 members under continuous load with hot entities: the owned lease counts
    differ by at most one once settled; duplicates only after the kill -9 (handoffs and
    SIGTERM hand over drained partitions)."""
    dbname, cname, rname = names("142")
    coll = client[dbname][cname]
    sub = TimedSubscriber("outbox/%s/#" % cname)
    members = [Member(RELAY_BIN, dbname, [cname], rname)]
    try:
        group = Group(client, dbname, rname)
        check(wait_until(lambda: group.counts(members) == [32], 20), "one member")
        load = Load(dbname, cname, ["f%d" % i for i in range(60)], hot=["hot-1", "hot-2", "hot-3"])
        time.sleep(1)
        members += [Member(RELAY_BIN, dbname, [cname], rname) for _ in range(3)]
        check(wait_until(lambda: group.settled(members), 40), "four did not settle: %s" %
              group.counts(members))
        four = group.counts(members)
        time.sleep(1)
        check(members[1].stop() == 0, "SIGTERM exit status")
        killed_at = time.time()
        members[2].kill9()
        left = [members[0], members[3]]
        check(wait_until(lambda: group.settled(left), 40), "two did not settle: %s" %
              group.counts(left))
        two = group.counts(left)
        figures = finish(load, sub, coll, left)
        early = [t for t in figures["dup_times"] if t < killed_at]
        report("1-4-2", figures, " four=%s two=%s duplicates_before_kill9=%d" %
               (four, two, len(early)))
        check_clean(figures)
        check(not early, "%d duplicates before the kill -9" % len(early))
    finally:
        stop_all([m for m in members if not m.stopped])
        sub.close()


def id_values():
    return [bson.ObjectId(), bson.Binary(os.urandom(16), 4), "str-id", 17,
            bson.int64.Int64(1 << 40), 5]


def publishers_of(members, event_ids):
    """The members whose taps saw a PUBLISH of any of `event_ids`."""
    return [m for m in members
            if any(json.loads(pub.payload)["id"] in event_ids
                   for pub in m.mqtt_proxy.publishes_since(0))]


def test_id_types():
    """ObjectId, UUID, string, int32 and int64 ids: each entity lands in exactly one partition
    and is published by exactly one member. Events written while a member is stopped are found
    by the sweep of the partitions the other takes over (the sweep's partition filter), later
    ones by the stream (the stream's filter): with the server's filter, or the relay's own (a
    test-mongod started with --without-expression toHashedIndexKey)."""
    dbname, cname, rname = names("ids")
    coll = client[dbname][cname]
    ents = Entities(coll)
    sub = TimedSubscriber("outbox/%s/#" % cname)
    a, b = members = [Member(RELAY_BIN, dbname, [cname], rname) for _ in range(2)]
    try:
        group = Group(client, dbname, rname)
        check(wait_until(lambda: group.settled(members), 30), "did not settle")
        mode = "server" if a.wait_log("the server filters partitions", 5) else "relay"
        a_parts = {p for p, o in group.owners().items() if o.startswith(a.instance_prefix())}
        a.pause()
        # Random ids, plus a string and an int id that surely fall in a's partitions.
        before = id_values()
        before.append(next("in-a-%d" % i for i in range(1000) if partition_of("in-a-%d" % i) in a_parts))
        before.append(next(i for i in range(1000, 2000) if partition_of(i) in a_parts))
        for v in before:
            ents.create(v, 2)
        # b takes a's partitions once their leases expire, and sweeps them.
        check(wait_until(lambda: group.counts(members)[1] == 32, TTL / 1000 + 10),
              "b did not take over: %s" % group.counts(members))
        check(b.wait_log("sweeping partitions", 10), "b did not sweep what it took")
        a.resume()
        check(wait_until(lambda: group.settled(members), 30), "did not settle again")
        after = [bson.ObjectId(), bson.Binary(os.urandom(16), 4), "str-id-2", 18,
                 bson.int64.Int64((1 << 41) + 3)]
        for v in after:
            ents.create(v, 2)
        for v in before + after:
            ents.append(v, 1)
        wanted = {i for ids in ents.ids.values() for i in ids}
        check(wait_until(lambda: wanted <= {json.loads(p)["id"] for _, p, _ in sub.snapshot()},
                         30), "not all events delivered")
        time.sleep(0.5)
        figures = verify({i: None for i in wanted}, sub.snapshot())
        check(figures["duplicates"] == 0, "%d duplicates" % figures["duplicates"])
        swept = 0
        for v in before + after:
            p = partition_of(v)
            ids = ents.ids[v]
            if v in before and p in a_parts:
                swept += 1
                check(publishers_of(members, set(ids[:2])) == [b],
                      "%r (partition %d, a's while it was stopped) was not swept by b" % (v, p))
            owner = group.owner_of(p, members)
            check(publishers_of(members, {ids[-1]}) == [owner],
                  "%r (partition %d): its last event published by members %s, owner %s"
                  % (v, p, [m.n for m in publishers_of(members, {ids[-1]})], owner.n))
            subject = key_of(v)
            if subject is not None:
                got = [json.loads(pl)["seq"] for t, pl, _ in sub.snapshot()
                       if json.loads(pl)["subject"] == subject]
                check(got == sorted(got), "%r out of order: %s" % (v, got))
        check(swept > 0, "no entity fell in a's partitions: the sweep was not exercised")
        # int32 5 and int64 5 are one _id for the server and one partition for the relay.
        check(partition_of(5) == partition_of(bson.int64.Int64(5)), "5 and 5L differ")
        print("  ids: %d entities (%d swept by the member that took over), filter in the %s; "
              "each published by exactly one member" % (len(before) + len(after), swept, mode))
    finally:
        a.resume()
        stop_all(members)
        sub.close()


def test_history_lost_during_a_move():
    """The stream's history rolls over while partitions move (a stopped member's leases are
    taken with checkpoints the server no longer has): 286, sweeps, nothing lost. Needs a
    server with a small history (OUTBOX_TEST_MONGOD_OPLOG_SIZE)."""
    requires("small oplog")
    size = int(os.environ["OUTBOX_TEST_MONGOD_OPLOG_SIZE"])
    dbname, cname, rname = names("oplog")
    coll = client[dbname][cname]
    sub = TimedSubscriber("outbox/%s/#" % cname)
    a = Member(RELAY_BIN, dbname, [cname], rname)
    b = None
    try:
        group = Group(client, dbname, rname)
        check(wait_until(lambda: group.counts([a]) == [32], 20), "a does not own all")
        load = Load(dbname, cname, ["h%d" % i for i in range(30)], delay=0.005)
        time.sleep(1.5)
        a.pause()
        filler = client[dbname]["filler"]
        for i in range(3 * size):
            filler.insert_one({"i": i})
        b = Member(RELAY_BIN, dbname, [cname], rname)
        check(b.wait_log("history is gone", 30), "b did not find the history gone")
        a.resume()
        check(wait_until(lambda: group.settled([a, b]), 40), "did not settle: %s" %
              group.counts([a, b]))
        figures = finish(load, sub, coll, [a, b])
        report("history lost during a move", figures)
        check_clean(figures)
    finally:
        a.resume()
        stop_all([m for m in (a, b) if m])
        sub.close()


def test_leases_deleted_while_running():
    """The lease documents are deleted, then the whole state collection is dropped, while a
    lone member runs: it re-creates the free partitions' leases and takes them again, as at
    start, and what is written afterwards is delivered (issue 29, 1)."""
    dbname, cname, rname = names("deleted")
    coll = client[dbname][cname]
    state = client[dbname]["outbox_relay_state"]
    sub = TimedSubscriber("outbox/%s/#" % cname)
    a = Member(RELAY_BIN, dbname, [cname], rname)
    try:
        group = Group(client, dbname, rname)
        check(wait_until(lambda: group.counts([a]) == [32], 20), "a does not own all")
        state.delete_many({"_id.relay": rname, "_id.partition": {"$exists": True}})
        check(wait_until(lambda: group.counts([a]) == [32], 10),
              "deleted leases not taken again: %s" % group.counts([a]))
        state.drop()
        check(wait_until(lambda: group.counts([a]) == [32], 10),
              "leases of a dropped collection not taken again: %s" % group.counts([a]))
        check(state.find_one({"_id": rname}) is not None, "the group document is not back")
        load = Load(dbname, cname, ["d%d" % i for i in range(10)])
        time.sleep(1)
        figures = finish(load, sub, coll, [a], timeout=20)
        report("leases deleted", figures)
        check_clean(figures)
    finally:
        stop_all([a])
        sub.close()


def test_malformed_leases():
    """Lease documents with a malformed epoch (a string; one at INT64_MAX, which $add would
    overflow to a double) written by someone else: they are repaired once free or expired
    and their partitions taken; every other partition is taken at once, a handoff included
    (issue 29, 4)."""
    dbname, cname, rname = names("malformed")
    coll = client[dbname][cname]
    state = client[dbname]["outbox_relay_state"]
    sub = TimedSubscriber("outbox/%s/#" % cname)
    a = Member(RELAY_BIN, dbname, [cname], rname)
    b = c = None
    try:
        group = Group(client, dbname, rname)
        check(wait_until(lambda: group.counts([a]) == [32], 20), "a does not own all")
        check(a.stop() == 0, "a did not stop cleanly")
        state.update_one({"_id": {"relay": rname, "partition": 5}}, {"$set": {"epoch": "x"}})
        state.update_one({"_id": {"relay": rname, "partition": 6}},
                         {"$set": {"epoch": bson.int64.Int64(2**63 - 1)}})
        b = Member(RELAY_BIN, dbname, [cname], rname)
        check(wait_until(lambda: group.counts([b]) == [32], 10),
              "b does not own all: %s" % group.counts([b]))
        docs = group.lease_docs()
        check(docs[5]["epoch"] == 1 and docs[6]["epoch"] == 1,
              "not repaired: %r %r" % (docs[5]["epoch"], docs[6]["epoch"]))
        check("malformed epoch" in b.log_text(), "the repair was not logged")
        # Malformed while owned: only that partition is held up, for one lease time.
        state.update_one({"_id": {"relay": rname, "partition": 7}}, {"$set": {"epoch": "y"}})
        c = Member(RELAY_BIN, dbname, [cname], rname)
        check(wait_until(lambda: group.settled([b, c]) and group.lease_docs()[7]["epoch"] == 1,
                         15), "did not settle: %s" % group.counts([b, c]))
        load = Load(dbname, cname, ["m%d" % i for i in range(10)])
        time.sleep(1)
        figures = finish(load, sub, coll, [b, c], timeout=20)
        report("malformed leases", figures)
        check_clean(figures)
    finally:
        stop_all([m for m in (a, b, c) if m])
        sub.close()


def test_settings_refused():
    """Members of one --name must keep their group in the same collections and watch the
    same collections: a relay started otherwise exits 78 naming both values, and the
    running member keeps every partition (issue 29, 2 and 3)."""
    dbname, cname, rname = names("settings")
    a = Member(RELAY_BIN, dbname, [cname], rname, metrics=True)
    try:
        group = Group(client, dbname, rname)
        check(wait_until(lambda: group.counts([a]) == [32], 20), "a does not own all")
        cases = [([cname, "others"], [], ["others"]),
                 ([cname], ["--lease-collection", "leases2"], ["leases2", "outbox_relay_state"]),
                 ([cname], ["--state-collection", "state2"], ["state2", "outbox_relay_state"]),
                 ([cname], ["--state-collection", "state3", "--lease-collection",
                            "outbox_relay_state"], ["state3", "outbox_relay_state"])]
        for colls, extra, named in cases:
            bad = Member(RELAY_BIN, dbname, colls, rname, extra)
            try:
                rc = bad.proc.wait(15)
            finally:
                bad.kill9()
            text = bad.log_text()
            check(rc == 78, "%s %s exited %s, not 78: %s" % (colls, extra, rc, text[-800:]))
            check(all(n in text for n in named), "refusal of %s %s does not name %s: %s" %
                  (colls, extra, named, text[-800:]))
        check(group.counts([a]) == [32], "a lost partitions: %s" % group.counts([a]))
        # A group of this name created elsewhere while a runs (a member with another
        # --state-collection that started at the same moment): flagged, not silent.
        client[dbname]["state9"].insert_one({"_id": rname, "partitions": 32})
        check(wait_until(lambda: a.http_get("/healthz")[0] == 503, 10),
              "a group elsewhere does not fail /healthz")
        check("lives in collection 'state9'" in a.log_text(), "not named in the log")
        check("\noutbox_relay_group_settings_mismatch 1\n" in a.http_get("/metrics")[1],
              "no mismatch gauge")
    finally:
        stop_all([a])


def test_forged_members():
    """50 member documents with a far-future expiry (forged, or from a clock far ahead) do
    not count as live: two real members share the partitions evenly (issue 29, 5)."""
    dbname, cname, rname = names("forged")
    state = client[dbname]["outbox_relay_state"]
    state.insert_many([{"_id": {"relay": rname, "member": "forged/%d/00000000" % i},
                        "host": "forged", "pid": i, "owned": 0,
                        "expiresAt": datetime.datetime(2100, 1, 1)} for i in range(50)])
    a = Member(RELAY_BIN, dbname, [cname], rname)
    b = None
    try:
        group = Group(client, dbname, rname)
        check(wait_until(lambda: group.counts([a]) == [32], 20), "a does not own all")
        b = Member(RELAY_BIN, dbname, [cname], rname)
        check(wait_until(lambda: group.counts([a, b]) == [16, 16], 15),
              "not 16 each: %s" % group.counts([a, b]))
    finally:
        stop_all([m for m in (a, b) if m])


def test_unhealthy_group():
    """A partition nobody can own (a lease held by a forged owner far into the future) and a
    member whose settings differ each fail /healthz and show in the gauges the alerts use
    (issue 29, 6)."""
    dbname, cname, rname = names("unhealthy")
    state = client[dbname]["outbox_relay_state"]
    a = Member(RELAY_BIN, dbname, [cname], rname, metrics=True)
    try:
        group = Group(client, dbname, rname)
        check(wait_until(lambda: group.counts([a]) == [32], 20), "a does not own all")
        check(wait_until(lambda: a.http_get("/healthz") == (200, "ok: active\n"), 5),
              "not healthy at first")
        other = {"relay": rname, "member": "other/1/00000000"}

        def other_member():
            state.update_one({"_id": other}, {"$set": {
                "settings": "collections=elsewhere", "host": "other", "pid": 1, "owned": 0,
                "expiresAt": datetime.datetime.utcnow() + datetime.timedelta(seconds=3)}},
                upsert=True)
            return a.http_get("/healthz")[0] == 503
        check(wait_until(other_member, 5), "a member with other settings is not seen")
        status, body = a.http_get("/healthz")
        check("different collections" in body, "healthz: %s %r" % (status, body))
        check("\noutbox_relay_group_settings_mismatch 1\n" in a.http_get("/metrics")[1],
              "no mismatch gauge")
        check("collections=elsewhere" in a.log_text(), "the other settings are not named")
        state.delete_one({"_id": other})
        check(wait_until(lambda: a.http_get("/healthz")[0] == 200, 5), "not healthy again")
        state.update_one({"_id": {"relay": rname, "partition": 3}}, {"$set": {
            "owner": "forged/1/00000000", "epoch": 99,
            "expiresAt": datetime.datetime(2100, 1, 1)}})
        check(wait_until(lambda: a.http_get("/healthz")[0] == 503, 10),
              "a partition nobody can own does not fail /healthz")
        status, body = a.http_get("/healthz")
        check("no owner" in body, "healthz: %r" % body)
        metrics = a.http_get("/metrics")[1]
        check("\noutbox_relay_group_partitions_unowned 1\n" in metrics and
              "\noutbox_relay_group_stalled 1\n" in metrics, "gauges: %s" %
              [ln for ln in metrics.splitlines() if "outbox_relay_group" in ln])
        state.update_one({"_id": {"relay": rname, "partition": 3}},
                         {"$set": {"owner": None, "expiresAt": None}})
        check(wait_until(lambda: a.http_get("/healthz") == (200, "ok: active\n"), 5),
              "not healthy once the partition is taken")
    finally:
        stop_all([a])


TESTS = [test_lone_member_and_refusals, test_standby_metrics_and_health,
         test_migration_of_the_old_checkpoint,
         test_kill9_failover, test_sigstop_longer_than_the_lease,
         test_sigstop_around_the_deadline, test_cut_from_mongodb, test_cut_from_the_broker,
         test_one_four_two, test_id_types, test_history_lost_during_a_move,
         test_leases_deleted_while_running, test_malformed_leases,
         test_settings_refused, test_forged_members,
         test_unhealthy_group]


def main():
    return run_tests("group", TESTS, sys.argv[2:])

if __name__ == "__main__":
    sys.exit(main())
