#!/usr/bin/python3
# Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
"""The relay's own writes on a replica set whose majority the tests take away (issue 26):
test-mongod --members 3 --enable-test-commands, faults made with testMemberFault. Each test
fails without what it checks:
- a URI asking for w=1 does not weaken the lease writes: with both secondaries paused the
  renewals time out (64, from the server) and are not counted;
- a take the server applied but no majority confirmed in time is not left stranded (named
  after a member that does not hold it) once it replicates;
- an archive insert that a majority does not hold is not followed by the clear: the events
  stay pending until the secondaries catch up;
- a member whose primary is cut off (it renews there, w:1 would succeed) stops publishing its
  partitions before the member on the majority side may take them (PUBLISH times per member
  from the taps);
- a w:1 write on a cut-off primary (rolled back at the heal) is never published, though the
  member on that primary reads the entity's document there (FINDINGS.md F8);
- the clock skew gauge follows a primary's clock offset, and a skew near the margin is logged;
- outbox-admin status says when the URI's read preference made it read from a secondary.
Lease times as in the group tests (ttl 3 s, renew 0.5 s, margin 1 s).
Against a deployment without test-mongod's testMemberFault (a real replica set, a mongos)
those tests skip, saying so.

usage: test_replset.py OUTBOX_RELAY OUTBOX_ADMIN [TEST_NAME ...]
       (run under tests/fixtures/with-servers)
"""

import json
import os
import re
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from grouptest import (MARGIN, MONGO_URI, RENEW, Entities, Group, Member,  # noqa: E402
                       partition_of, pymongo, wait_until)
from relaytest import Int64, Skip, Subscriber, db_name, event, needing, run_tests  # noqa: E402

RELAY_BIN = sys.argv[1] if len(sys.argv) > 1 else "outbox-relay"
ADMIN_BIN = sys.argv[2] if len(sys.argv) > 2 else "outbox-admin"
RUN = "%d" % os.getpid()
seed = pymongo.MongoClient(MONGO_URI) if MONGO_URI else None


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def names(test):
    return db_name("rs_%s_%s" % (test, RUN)), "things", "rs-%s-%s" % (test, RUN)


def hello():
    return seed.admin.command("hello")


def rs_uri(hosts=None, extra=""):
    h = hello()
    return "mongodb://%s/?replicaSet=%s%s" % (",".join(hosts or h["hosts"]), h["setName"], extra)


def rs_client():
    return pymongo.MongoClient(rs_uri(), serverSelectionTimeoutMS=20000)


def primary():
    """The current primary's host:port, as the members that are not cut off see it."""
    with rs_client() as c:
        wait_until(lambda: c.admin.command("hello").get("primary"), 20)
        return c.admin.command("hello")["primary"]


def fault(member, mode, **kw):
    """testMemberFault on the admin of a member that answers (any of them)."""
    last = None
    for host in hello()["hosts"]:
        try:
            with pymongo.MongoClient("mongodb://%s/?directConnection=true" % host,
                                     serverSelectionTimeoutMS=3000) as c:
                return c.admin.command(dict({"testMemberFault": member, "mode": mode}, **kw))
        except pymongo.errors.PyMongoError as e:
            last = e
    raise last


def secondaries():
    h = hello()
    p = primary()
    return [x for x in h["hosts"] if x != p]


def metric(member, name):
    _, body = member.http_get("/metrics")
    m = re.search(r"^%s (\S+)$" % re.escape(name), body, re.M)
    return float(m.group(1)) if m else None


def owns_all(group, member):
    owners = group.owners()
    return len(owners) == group.n and all(o and o.startswith(member.instance_prefix())
                                          for o in owners.values())


class Writer:
    """Appends one event every few ms to entities through the set (retrying across elections),
    as liboutbox would."""

    def __init__(self, db, coll, ids, delay=0.01):
        self.client = rs_client()
        self.ents = Entities(self.client[db][coll])
        self.ids, self.delay = ids, delay
        for eid in ids:
            self.ents.create(eid, 1)
        self.stop_flag = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        i = 0
        while not self.stop_flag.is_set():
            eid = self.ids[i % len(self.ids)]
            try:
                self.ents.append(eid, 1)
                i += 1
            except pymongo.errors.PyMongoError:
                time.sleep(0.1)  # an election: the same entity again
            time.sleep(self.delay)

    def stop(self):
        self.stop_flag.set()
        self.thread.join()
        self.client.close()


# ----------------------------------------------------------------------------------------------

def test_uri_w1_does_not_weaken_lease_writes():
    """The URI asks for w=1; with both secondaries paused a majority cannot acknowledge, so
    every renewal fails with the server's 64 (waiting for replication timed out) and the renew
    histogram (successful renewals only) stands still. With the URI's w=1 they would succeed."""
    dbname, cname, rname = names("w1")
    m = Member(RELAY_BIN, dbname, [cname], rname, metrics=True, mongo_uri=rs_uri(extra="&w=1"))
    group = Group(rs_client(), dbname, rname)
    paused = []
    try:
        check(wait_until(lambda: owns_all(group, m), 30), "the member did not take the leases")
        check(wait_until(lambda: (metric(m, "outbox_relay_lease_renew_seconds_count") or 0) > 2,
                         10), "no renewal counted")
        for s in secondaries():
            fault(s, "pause")
            paused.append(s)
        time.sleep(RENEW / 1000)  # a renewal already acknowledged may still be counted
        before = metric(m, "outbox_relay_lease_renew_seconds_count")
        time.sleep(4 * RENEW / 1000 + 0.5)
        after = metric(m, "outbox_relay_lease_renew_seconds_count")
        print("  renewals counted while paused: %d" % (after - before), flush=True)
        check(after == before, "%d renewals counted without a majority" % (after - before))
        check(re.search(r"renewing leases failed: .*waiting for replication timed out",
                        m.log_text()), "no renewal failed with the server's 64")
        for s in paused:
            fault(s, "resume")
        paused = []
        check(wait_until(lambda: metric(m, "outbox_relay_lease_renew_seconds_count") > after,
                         10), "renewals did not resume with the majority")
    finally:
        for s in paused:
            fault(s, "resume")
        rc = m.stop()
        check(rc == 0, "member exited with %s" % rc)


def test_lease_taken_without_acknowledgement_is_not_stranded():
    """Both secondaries lag 1.5 s, three times the lease writes' wtimeout: each take is made on
    the primary, reported as failed (64) and replicated later, so the leases say this member
    owns partitions it never counted. Once the lag is gone it must end up holding every
    partition (a lease that names it but that it does not hold is released, fenced by its
    epoch, and taken again), not leave them owned by nobody that publishes."""
    dbname, cname, rname = names("lag")
    lagging = secondaries()
    m = None
    try:
        for s in lagging:
            fault(s, "lag", ms=1500)
        m = Member(RELAY_BIN, dbname, [cname], rname, metrics=True, mongo_uri=rs_uri())
        group = Group(rs_client(), dbname, rname)
        check(wait_until(lambda: any(o and o.startswith(m.instance_prefix())
                                     for o in group.owners().values()), 20),
              "no take reached the leases")
        time.sleep(2)
        for s in lagging:
            fault(s, "lag", ms=-1)
        lagging = []
        held = lambda: metric(m, "outbox_relay_partitions_owned")  # noqa: E731
        check(wait_until(lambda: held() == group.n and owns_all(group, m), 20),
              "the member holds %s of %d partitions (leases: %s)" %
              (held(), group.n, sorted(set(group.owners().values()), key=str)))
    finally:
        for s in lagging:
            fault(s, "lag", ms=-1)
        if m:
            rc = m.stop()
            check(rc == 0, "member exited with %s" % rc)


def test_archive_not_majority_then_no_clear():
    """An event is published; its PUBACK comes back only after both secondaries are paused,
    so the archive insert is made but no majority holds it (wtimeout: 64). The clear must not
    follow: the event stays pending (read on the primary, where a w:1 clear would show) while
    the entry sits in the archive; once the secondaries resume, the clear goes through."""
    dbname, cname, rname = names("arch")
    # Default lease times: the gate stays open for seconds after the pause (renewals fail),
    # so the acknowledgement is handled as usual, and the archive insert waits 10 s.
    m = Member(RELAY_BIN, dbname, [cname], rname,
               ["--archive-collection", "arch", "--lease-ttl-ms", "10000",
                "--lease-renew-ms", "2000", "--lease-margin-ms", "2000"], mongo_uri=rs_uri())
    c = rs_client()
    group = Group(c, dbname, rname)
    coll, arch = c[dbname][cname], c[dbname]["arch"]
    paused = []
    try:
        check(wait_until(lambda: owns_all(group, m), 30), "the member did not take the leases")
        ents = Entities(coll)
        ents.create("warm", 1)
        check(wait_until(lambda: ents.pending() == 0, 20), "the relay does not clear")
        m.mqtt_proxy.slow_replies(1.5)  # PUBACKs reach the relay 1.5 s late
        since = time.time()
        evs = ents.create("e1", 1)
        check(wait_until(lambda: m.mqtt_proxy.publishes_since(since), 10), "not published")
        for s in secondaries():
            fault(s, "pause")
            paused.append(s)
        archived = lambda: arch.find_one({"_id": evs[0]["id"]}) is not None  # noqa: E731
        check(wait_until(archived, 10), "the archive insert was not made")
        time.sleep(1.5)
        left = coll.find_one({"_id": "e1"})["events"]
        print("  pending while the archive entry is not majority-held: %d" % len(left),
              flush=True)
        check(len(left) == 1, "cleared although the archive entry may still be rolled back")
        for s in paused:
            fault(s, "resume")
        paused = []
        check(wait_until(lambda: not coll.find_one({"_id": "e1"})["events"], 20),
              "not cleared once a majority holds the archive entry")
        check(archived(), "the archive entry is gone")
    finally:
        for s in paused:
            fault(s, "resume")
        rc = m.stop()
        c.close()
        check(rc == 0, "member exited with %s" % rc)


def test_clock_skew_gauge_and_warning():
    """The primary's clock set 1.5 s ahead: the gauge shows it (within the round trip), and
    the relay warns (half the 1 s margin is reached); back at 0 the gauge follows."""
    dbname, cname, rname = names("skew")
    p = primary()
    m = Member(RELAY_BIN, dbname, [cname], rname, metrics=True, mongo_uri=rs_uri())
    try:
        check(wait_until(lambda: metric(m, "outbox_relay_server_clock_skew_seconds") is not None,
                         20), "no skew gauge")
        check(abs(metric(m, "outbox_relay_server_clock_skew_seconds")) < 0.25,
              "skew without an offset: %s" % metric(m, "outbox_relay_server_clock_skew_seconds"))
        check(metric(m, "outbox_relay_lease_margin_seconds") == MARGIN / 1000, "margin gauge")
        fault(p, "clock", ms=1500)
        check(wait_until(lambda: abs(metric(m, "outbox_relay_server_clock_skew_seconds") - 1.5)
                         < 0.25, 10),
              "gauge %s, offset 1.5 s" % metric(m, "outbox_relay_server_clock_skew_seconds"))
        check(m.wait_log("the clock of MongoDB primary", 10), "no warning near the margin")
        fault(p, "clock", ms=0)
        check(wait_until(lambda: abs(metric(m, "outbox_relay_server_clock_skew_seconds")) < 0.25,
                         10), "the gauge did not follow the clock back")
    finally:
        fault(p, "clock", ms=0)
        rc = m.stop()
        check(rc == 0, "member exited with %s" % rc)


def test_isolated_primary_renewal_not_counted():
    """Member a talks to the primary only; member b to the whole set. The primary is cut off
    (it keeps taking a's w:1 writes until it steps down) and b's side elects another. a's
    renewals there never reach a majority, so a stops publishing at the deadline of its last
    majority-acknowledged renewal, before its leases expire on the new primary and b takes
    them: for every partition, a's last PUBLISH precedes b's first."""
    dbname, cname, rname = names("iso")
    p = primary()
    others = [h for h in hello()["hosts"] if h != p]
    a = Member(RELAY_BIN, dbname, [cname], rname,
               mongo_uri="mongodb://%s/?directConnection=true" % p)
    group = Group(rs_client(), dbname, rname)
    ids = ["k%d" % i for i in range(64)]
    writer = b = None
    isolated = False
    try:
        check(wait_until(lambda: owns_all(group, a), 30), "a did not take the leases")
        writer = Writer(dbname, cname, ids)
        check(wait_until(lambda: len(a.mqtt_proxy.publishes_since(0)) > 20, 20),
              "a is not publishing")
        # A backlog, so that a has events to publish after the cut: the stream gives it
        # nothing new then (the cut-off primary commits nothing), and that primary's w:1
        # writes are not for publishing (F8).
        a.mqtt_proxy.slow_replies(0.2)
        time.sleep(1)
        cut = time.time()
        fault(p, "isolate")
        isolated = True
        b = Member(RELAY_BIN, dbname, [cname], rname, mongo_uri=rs_uri(others))
        check(wait_until(lambda: owns_all(Group(rs_client(), dbname, rname), b), 30),
              "b did not take the leases")
        time.sleep(2)
        first_b, last_a = {}, {}
        for x in b.mqtt_proxy.publishes_since(cut):
            part = partition_of(x.topic.rsplit("/", 1)[1])
            first_b[part] = min(first_b.get(part, x.time), x.time)
        for x in a.mqtt_proxy.publishes_since(cut):
            part = partition_of(x.topic.rsplit("/", 1)[1])
            last_a[part] = max(last_a.get(part, x.time), x.time)
        both = sorted(set(first_b) & set(last_a))
        overlap = [p_ for p_ in both if last_a[p_] >= first_b[p_]]
        print("  partitions a published after the cut: %d, b took over: %d, both publishing "
              "at once: %d (a's last publish %.2f s after the cut)" %
              (len(last_a), len(first_b), len(overlap),
               max(last_a.values()) - cut if last_a else -1), flush=True)
        check(last_a and first_b, "a or b published nothing after the cut: proves nothing")
        check(not overlap, "partitions published by a after b took them: %s" % overlap)
    finally:
        if writer:
            writer.stop()
        if isolated:
            fault(p, "heal")
            wait_until(lambda: all(m.get("health") == 1 for m in
                                   rs_client().admin.command("replSetGetStatus")["members"]), 20)
        for m in (a, b):
            if m:
                m.stop()


def failpoint(mode, **data):
    """configureFailPoint failCommand on a member that answers (any of them)."""
    last = None
    for host in hello()["hosts"]:
        try:
            with pymongo.MongoClient("mongodb://%s/?directConnection=true" % host,
                                     serverSelectionTimeoutMS=3000) as c:
                return c.admin.command("configureFailPoint", "failCommand", mode=mode,
                                       data=data)
        except pymongo.errors.PyMongoError as e:
            last = e
    raise last


def test_cut_off_primary_w1_write_not_published():
    """Member a talks to the primary only. A requeue of entity g (a change whose events a
    reads from the document) is held while a's reads fail (failCommand); the primary is cut
    off and takes a w:1 write adding an event to g, which the heal rolls back; then a's reads
    work again. a reads g's document on the cut-off primary: it must not publish that event
    (FINDINGS.md F8: with readConcern local it does, within the read's retry backoff)."""
    dbname, cname, rname = names("w1read")
    p = primary()
    direct = pymongo.MongoClient("mongodb://%s/?directConnection=true" % p, w=1,
                                 serverSelectionTimeoutMS=3000)
    a = Member(RELAY_BIN, dbname, [cname], rname,
               mongo_uri="mongodb://%s/?directConnection=true" % p)
    isolated = failing = False
    try:
        check(wait_until(lambda: owns_all(Group(rs_client(), dbname, rname), a), 30),
              "a did not take the leases")
        with rs_client() as c:
            coll = c[dbname][cname]
            Entities(coll).create("g", 1)
            check(wait_until(lambda: coll.find_one({"_id": "g"})["events"] == [], 20),
                  "a did not publish and clear g's first event")
            since = time.time()
            failpoint("alwaysOn", failCommands=["find"], appName="outbox-relay", errorCode=8)
            failing = True
            coll.update_one({"_id": "g"}, {"$inc": {"requeues": 1}})
        check(wait_until(lambda: "reading an entity failed" in a.log_text(), 10),
              "a did not read g for its requeue")
        fault(p, "isolate")
        isolated = True
        ghost = event(2)
        direct[dbname][cname].update_one(
            {"_id": "g"}, {"$push": {"events": ghost},
                           "$inc": {"version": Int64(1), "eventSeq": Int64(1)}})
        seen = direct[dbname][cname].with_options(
            read_concern=pymongo.read_concern.ReadConcern("majority")).find_one({"_id": "g"})
        if seen["events"]:
            raise Skip("test-mongod shows a cut-off primary's w:1 write to a majority read "
                       "(FINDINGS.md F10), so no relay could tell it apart")
        failpoint("off")
        failing = False
        time.sleep(3)  # a's leases hold ttl - margin (2 s) after its last renewal
        sent = [x for x in a.mqtt_proxy.publishes_since(since)
                if x.topic.rsplit("/", 1)[1] == "g"]
        print("  publishes of g after its requeue: %d" % len(sent), flush=True)
        check(not sent, "a published g's w:1 event from the cut-off primary: %s" %
              [x.payload[:80] for x in sent])
    finally:
        if failing:
            failpoint("off")
        if isolated:
            fault(p, "heal")
            wait_until(lambda: all(m.get("health") == 1 for m in
                                   rs_client().admin.command("replSetGetStatus")["members"]), 20)
        a.stop()
        direct.close()


def test_admin_status_says_secondary():
    """outbox-admin status follows the URI's read preference: with readPreference=secondary
    it names the secondary it read from and says the counts may be stale (text and JSON);
    with the default (primary) it says nothing of the kind."""
    dbname, cname, _ = names("admin")
    with rs_client() as c:
        Entities(c[dbname][cname]).create("x", 2)

    def status(uri, *args):
        p = subprocess.run([ADMIN_BIN, "--database", dbname, "--collection", cname, "status"] +
                           list(args), capture_output=True, text=True, timeout=60,
                           env=dict(os.environ, OUTBOX_MONGODB_URI=uri))
        check(p.returncode == 0, "status failed: %s" % p.stderr)
        return p.stdout

    out = json.loads(status(rs_uri(extra="&readPreference=secondary"), "--json"))
    rf = out.get("readFrom", {})
    check(rf.get("secondary") is True and rf.get("mayBeStale") is True and
          rf.get("readPreference") == "secondary" and rf.get("member") in secondaries(), rf)
    text = status(rs_uri(extra="&readPreference=secondary"))
    check(re.search(r"^note: read from secondary \S+ \(readPreference secondary", text, re.M),
          text)
    out = json.loads(status(rs_uri(), "--json"))
    check(out["readFrom"]["secondary"] is False and out["readFrom"]["member"] == primary(),
          out["readFrom"])
    check("note: read from secondary" not in status(rs_uri()), "a primary read called stale")


class TenantWriter:
    """Appends one event at a time to entities spread over tenant databases through the set,
    retrying across elections; records every committed event id with its entity."""

    def __init__(self, dbs, coll, ids):
        self.client = rs_client()
        self.ents = [Entities(self.client[db][coll]) for db in dbs]
        self.ids, self.committed = ids, {}
        for e in self.ents:
            for eid in ids:
                evs = e.create(eid, 1)
                self.committed[evs[0]["id"]] = (e.coll.database.name, eid, 1)
        self.stop_flag = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        i = 0
        while not self.stop_flag.is_set():
            e = self.ents[i % len(self.ents)]
            eid = self.ids[(i // len(self.ents)) % len(self.ids)]
            try:
                evs = e.append(eid, 1)
                self.committed[evs[0]["id"]] = (e.coll.database.name, eid, evs[0]["seq"])
                i += 1
            except pymongo.errors.PyMongoError:
                # An election: the outcome is unknown; go on from the seq the set has.
                time.sleep(0.1)
                try:
                    e.seq[eid] = int(e.coll.find_one({"_id": eid})["eventSeq"])
                except pymongo.errors.PyMongoError:
                    pass
            time.sleep(0.005)

    def stop(self):
        self.stop_flag.set()
        self.thread.join()
        self.client.close()


def test_group_of_tenants_through_stepdown():
    """Two members of a group share the partitions of many tenant databases (--namespace,
    one cluster stream each) while the primary steps down under load: every committed event
    is published, each entity's events in seq order (issue 37)."""
    base = "rs_ns_%s" % RUN
    dbs = ["%s_t%d" % (base, i) for i in range(8)]
    rname = "rs-ns-%s" % RUN
    extra = ["--namespace", base + "_t*.things", "--topic", "rsns%s/{db}/{id}" % RUN]
    sub = Subscriber("rsns%s/#" % RUN)
    members = [Member(RELAY_BIN, base + "_state", [], rname, extra, mongo_uri=rs_uri())
               for _ in range(2)]
    group = Group(rs_client(), base + "_state", rname)
    writer = None
    try:
        check(wait_until(lambda: group.settled(members), 40), "the group did not settle")
        writer = TenantWriter(dbs, "things", ["a", "b", "c"])
        time.sleep(1.0)
        old = primary()
        with pymongo.MongoClient("mongodb://%s/?directConnection=true" % old) as c:
            try:
                c.admin.command("replSetStepDown", 3, secondaryCatchUpPeriodSecs=1)
            except pymongo.errors.PyMongoError:
                pass
        check(wait_until(lambda: primary() != old, 20), "no new primary")
        time.sleep(1.5)
        writer.stop()
        committed = dict(writer.committed)
        print("  %d events committed to %d entities in %d databases across the stepdown" %
              (len(committed), len(dbs) * 3, len(dbs)), flush=True)
        check(wait_until(lambda: {json.loads(p)["id"] for _, p, _ in sub.snapshot()} >=
                         set(committed), 60),
              "lost: %d" % len(set(committed) - {json.loads(p)["id"]
                                                  for _, p, _ in sub.snapshot()}))
        first_seen = {}
        for t, p, _ in sub.snapshot():
            ev = json.loads(p)
            seen = first_seen.setdefault(t, [])
            if ev["seq"] not in seen:
                seen.append(ev["seq"])
        for t, seqs in first_seen.items():
            check(seqs == sorted(seqs), "%s published out of order: %s" % (t, seqs))
        check(len(first_seen) == len(dbs) * 3, "entities: %d" % len(first_seen))
        for m in members:
            check(m.log_text().count("through one cluster stream") == 1, "not one stream")
    finally:
        if writer and not writer.stop_flag.is_set():
            writer.stop()
        for m in members:
            m.stop()
        sub.close()
        with rs_client() as c:
            for db in dbs + [base + "_state"]:
                c.drop_database(db)


# The first test steps the primary down (replSetStepDown: any set of three); the others but
# test_admin_status_says_secondary take the majority away with test-mongod's testMemberFault.
faults = needing("members>=3", "test-mongod faults")
TESTS = [needing("members>=3")(test_group_of_tenants_through_stepdown),
         needing("replset")(test_admin_status_says_secondary)] + [faults(t) for t in (
    test_uri_w1_does_not_weaken_lease_writes, test_lease_taken_without_acknowledgement_is_not_stranded,
    test_archive_not_majority_then_no_clear, test_clock_skew_gauge_and_warning,
    test_isolated_primary_renewal_not_counted, test_cut_off_primary_w1_write_not_published)]

if __name__ == "__main__":
    sys.exit(run_tests("relay-replset", TESTS, sys.argv[3:]))
