#!/usr/bin/python3
# Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
"""outbox-relay end to end: real mosquitto, the MongoDB test server (or a real replica set
through OUTBOX_TEST_MONGODB_URI), documents written with pymongo following the stored
contract, and an MQTT subscriber checking what arrives.

usage: test_relay.py OUTBOX_RELAY [TEST_NAME ...]   (run under tests/fixtures/with-servers)
"""

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from relaytest import db_name  # noqa: E402 (the run's database names)
from relaytest import (MONGO_URI, WORKDIR, Entities, Int64, Relay, Subscriber,  # noqa: E402
                       event, free_port, metric, pymongo, requires, run_tests, wait_until)

RELAY_BIN = sys.argv[1] if len(sys.argv) > 1 else "outbox-relay"
RUN = "%d" % os.getpid()
client = pymongo.MongoClient(MONGO_URI) if MONGO_URI else None


def names(test):
    """A database, a collection and a relay name no other test (or run) uses."""
    return db_name("relay_e2e_%s_%s" % (test, RUN)), "things_%s" % RUN, "relay-%s-%s" % (test, RUN)


def decode(messages):
    """[(topic, payload dict, props)] for structured-mode messages."""
    return [(t, json.loads(p.decode("utf-8")), props) for t, p, props in messages]


def per_entity(messages):
    out = {}
    for _, ce, _ in decode(messages):
        out.setdefault(ce["subject"], []).append(ce["seq"])
    return out


def overflow_history(dbname):
    """Writes three times the server's history bound elsewhere in @dbname: a stream
    position taken before this is gone (286)."""
    client[dbname]["filler"].insert_many(
        [{"i": i} for i in range(3 * int(os.environ["OUTBOX_TEST_MONGOD_OPLOG_SIZE"]))])


def dead_letters(coll):
    """(entity id, seq) of every dead-lettered event in @coll."""
    return [(d["_id"], x.get("event", {}).get("seq"))
            for d in coll.find({"deadLetters.0": {"$exists": True}}) for x in d["deadLetters"]]


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def has_small_oplog():
    """Skips the test (deployment.Skip) unless the server keeps a short history (the
    history-loss tests need one)."""
    requires("small oplog")
    return True


def pausable_broker():
    """The pid of the fixture's own mosquitto, which a test may SIGSTOP, when the server also
    keeps a short history; skips the test when either is missing."""
    requires("small oplog", "fixture broker")
    return int(os.environ["OUTBOX_TEST_MOSQUITTO_PID"])


def wait_cleared(coll, timeout=30):
    return wait_until(lambda: all(len(d.get("events", [])) == 0
                                  for d in coll.find({}, {"events": 1})), timeout)


def test_stream_order_and_clear():
    """N events over M entities, several per commit, before and after the relay starts:
    all arrive in per-entity seq order, exactly once, and are cleared; nothing else."""
    dbname, cname, rname = names("basic")
    coll = client[dbname][cname]
    ents = Entities(coll)
    sub = Subscriber("outbox/%s/#" % cname)
    for i in range(5):
        ents.create("e%d" % i, 2)
    relay = Relay(RELAY_BIN, dbname, [cname], rname)
    try:
        check(relay.wait_log("change stream open"), "relay did not open its stream")
        for i in range(5, 10):
            ents.create("e%d" % i, 2)
        for round_ in range(3):
            for i in range(10):
                ents.append("e%d" % i, 2)
        total = 10 * 8
        check(wait_until(lambda: sub.count() >= total, 60),
              "only %d of %d messages arrived" % (sub.count(), total))
        check(wait_cleared(coll), "events were not cleared")
        time.sleep(0.5)
        msgs = sub.snapshot()
        check(len(msgs) == total, "expected %d messages, got %d" % (total, len(msgs)))
        for eid, seqs in per_entity(msgs).items():
            check(seqs == list(range(1, 9)), "entity %s got seqs %s" % (eid, seqs))
        topic, ce, props = decode(msgs)[0]
        check(topic == "outbox/%s/%s" % (cname, ce["subject"]), "topic %s" % topic)
        for key in ("specversion", "id", "source", "type", "subject", "time",
                    "datacontenttype", "data", "seq"):
            check(key in ce, "CloudEvent lacks %s: %s" % (key, ce))
        check(ce["specversion"] == "1.0" and ce["source"] == "/%s/%s" % (dbname, cname),
              "bad CloudEvent %s" % ce)
        check(ce["time"].endswith("Z") and len(ce["time"]) == 24, "time %s" % ce["time"])
        check(props.get("event-id") == ce["id"] and props.get("seq") == str(ce["seq"]) and
              props.get("entity-id") == ce["subject"] and props.get("event-type") == ce["type"],
              "user properties %s" % props)
        check(props.get("$content-type") == "application/cloudevents+json",
              "content type %s" % props.get("$content-type"))
        for d in coll.find():
            check(d["version"] == 4 and d["eventSeq"] == 8, "relay touched %s" % d)
        check(relay.stop() == 0, "relay did not exit 0 on SIGTERM")
        # The checkpoint lives in the group's partition leases (the group document keeps the
        # partition count): every lease holds a token after a clean stop.
        state = client[dbname]["outbox_relay_state"]
        leases = list(state.find({"_id.relay": rname, "_id.partition": {"$exists": True}}))
        check(state.find_one({"_id": rname, "partitions": 32}) is not None and len(leases) == 32
              and all(lease.get("token") for lease in leases),
              "no checkpoint saved: %s" % leases[:2])
    finally:
        relay.stop()
        sub.close()


def test_restart_from_checkpoint():
    """A restart publishes nothing that was already cleared, and then the new events."""
    dbname, cname, rname = names("restart")
    coll = client[dbname][cname]
    ents = Entities(coll)
    sub = Subscriber("outbox/%s/#" % cname)
    relay = Relay(RELAY_BIN, dbname, [cname], rname)
    try:
        check(relay.wait_log("change stream open"), "relay did not open its stream")
        for i in range(6):
            ents.create("r%d" % i, 3)
        check(wait_until(lambda: sub.count() >= 18, 30), "first batch did not arrive")
        check(wait_cleared(coll), "first batch not cleared")
        check(relay.stop() == 0, "relay did not exit 0")
        first = sub.count()
        for i in range(6):
            ents.append("r%d" % i, 2)
        relay = Relay(RELAY_BIN, dbname, [cname], rname)
        check(wait_until(lambda: sub.count() >= first + 12, 30), "second batch did not arrive")
        check(wait_cleared(coll), "second batch not cleared")
        time.sleep(1.0)
        later = decode(sub.snapshot()[first:])
        check(len(later) == 12, "after restart expected 12 messages, got %d" % len(later))
        for _, ce, _ in later:
            check(ce["seq"] in (4, 5), "re-published an old event: %s" % ce)
        check("resuming from the checkpoint" in relay.log_text(), "did not resume")
    finally:
        relay.stop()
        sub.close()


def test_kill9_republishes_only_the_tail():
    """kill -9 between publish and clear: afterwards only events that were still pending are
    published again (duplicates allowed, gaps not), each entity still in order."""
    dbname, cname, rname = names("kill9")
    coll = client[dbname][cname]
    ents = Entities(coll)
    sub = Subscriber("outbox/%s/#" % cname)
    for i in range(20):
        ents.create("k%d" % i, 1)
    relay = Relay(RELAY_BIN, dbname, [cname], rname)
    try:
        check(wait_until(lambda: sub.count() >= 20, 30), "first events did not arrive")
        check(wait_cleared(coll), "first events not cleared")
        check(relay.stop() == 0, "relay did not exit 0")
        # Now a checkpoint that stays put: at the kill, every change after it is replayed,
        # most of them already published and cleared, and those must not go out again.
        relay = Relay(RELAY_BIN, dbname, [cname], rname, ["--checkpoint-interval-ms", "600000"])
        check(relay.wait_log("change stream open"), "relay did not open its stream")
        # The writer keeps appending across the kill and one more round after it, so events
        # are pending at the kill however fast the relay is (a fixed batch written up front
        # could all be published and cleared before the kill on a quiet machine).
        stop_writing = threading.Event()

        def write():
            # At most 100 rounds (4,000 events): through a mongos whose idle shard holds the
            # stream back up to its no-op interval (10 s by default), an unbounded writer
            # piles up more than the subscriber takes in the time below.
            rounds = 0
            while not stop_writing.is_set() and rounds < 100:
                rounds += 1
                for i in range(20):
                    ents.append("k%d" % i, 2)
            for i in range(20):
                ents.append("k%d" % i, 2)

        writer = threading.Thread(target=write)
        writer.start()
        wait_until(lambda: sub.count() >= 200, 60)
        relay.kill()
        stop_writing.set()
        writer.join()
        total = sum(len(ids) for ids in ents.ids.values())
        # Messages the killed relay handed to the broker may still be on their way to us:
        # wait for silence, so "after the restart" means sent by the second relay.
        last = -1
        while sub.count() != last:
            last = sub.count()
            time.sleep(0.5)
        pending = set()
        for d in coll.find({}, {"events": 1}):
            pending |= {e["id"] for e in d.get("events", [])}
        before = sub.count()
        print("  killed with %d of %d delivered, %d pending" % (before, total, len(pending)))
        check(pending and before > 0, "nothing in flight at the kill: the test proves nothing")
        relay = Relay(RELAY_BIN, dbname, [cname], rname)
        check(wait_cleared(coll, 60), "not everything was cleared after the restart")
        expected = {i for ids in ents.ids.values() for i in ids}

        def got():
            return {ce["id"] for _, ce, _ in decode(sub.snapshot())}
        wait_until(lambda: expected <= got(), 30)
        time.sleep(1.0)  # and nothing more after them: a late duplicate would show below
        msgs = decode(sub.snapshot())
        check(expected <= got(), "%d events never arrived" % len(expected - got()))
        again = [ce for _, ce, _ in msgs[before:]]
        stale = [ce["id"] for ce in again if ce["id"] not in pending]
        check(not stale, "%d events re-published although already cleared" % len(stale))
        order = {}
        for ce in again:
            order.setdefault(ce["subject"], []).append(ce["seq"])
        for eid, seqs in order.items():
            check(seqs == sorted(seqs), "entity %s out of order after restart: %s" % (eid, seqs))
    finally:
        relay.stop()
        sub.close()


def test_sweep_without_state():
    """No checkpoint (never ran, or the state document was deleted): a sweep publishes every
    pending event, then the stream continues from before the sweep."""
    dbname, cname, rname = names("sweep")
    coll = client[dbname][cname]
    ents = Entities(coll)
    sub = Subscriber("outbox/%s/#" % cname)
    for i in range(30):
        ents.create("s%d" % i, 2)
    relay = Relay(RELAY_BIN, dbname, [cname], rname)
    try:
        check(wait_until(lambda: sub.count() >= 60, 30), "sweep did not deliver all")
        check(wait_cleared(coll), "swept events not cleared")
        check(relay.stop() == 0, "relay did not exit 0")
        client[dbname]["outbox_relay_state"].delete_one({"_id": rname})
        for i in range(30):
            ents.append("s%d" % i, 1)
        relay = Relay(RELAY_BIN, dbname, [cname], rname)
        check(wait_until(lambda: sub.count() >= 90, 30), "second sweep did not deliver all")
        check(wait_cleared(coll), "not cleared after the second sweep")
        ents.append("s0", 1)
        check(wait_until(lambda: sub.count() >= 91, 30), "stream after the sweep is dead")
        check("sweep" in relay.log_text(), "no sweep logged")
        for eid, seqs in per_entity(sub.snapshot()).items():
            check(seqs == sorted(seqs) and set(seqs) == set(range(1, len(set(seqs)) + 1)),
                  "entity %s seqs %s" % (eid, seqs))
    finally:
        relay.stop()
        sub.close()


def test_sweep_races_the_stream():
    """Writers keep appending while a sweep walks a large backlog. The sweep's cursor
    fetches documents a batch ahead of using them, and the stream, started before the
    sweep, reads a document it sees changing afresh and publishes and clears its events
    meanwhile: the sweep's older copy of that document must not make those events look
    like repeated seqs (they were dead-lettered, never delivered) nor publish them again."""
    dbname, cname, rname = names("sweeprace")
    coll = client[dbname][cname]
    ents = Entities(coll)
    sub = Subscriber("outbox/%s/#" % cname)
    n, per, hot = 400, 20, 60
    for i in range(n):
        ents.create("r%03d" % i, per)
    stop_writing = threading.Event()
    failed = []

    def write():
        # The far end of the sweep's order, so its copies there are old by the time it
        # uses them.
        try:
            while not stop_writing.is_set():
                for i in range(n - hot, n):
                    ents.append("r%03d" % i, 1)
        except Exception as exc:  # noqa: BLE001 - reported by the main thread
            failed.append(exc)
    relay = Relay(RELAY_BIN, dbname, [cname], rname, ["--max-buffered-events", "300"])
    writer = threading.Thread(target=write)
    try:
        writer.start()
        check(relay.wait_log("sweep done", 60), "the sweep did not finish")
        stop_writing.set()
        writer.join()
        check(not failed, "the writer failed: %s" % failed)
        total = n * per + sum(ents.seq["r%03d" % i] - per for i in range(n - hot, n))
        check(wait_until(lambda: len({ce["id"] for _, ce, _ in decode(sub.snapshot())})
                         >= total, 60), "only %d of %d events arrived" % (sub.count(), total))
        check(wait_cleared(coll), "not cleared")
        dead = dead_letters(coll)
        print("  %d events, %d messages (%d duplicates), writer appended %d" %
              (total, sub.count(), sub.count() - total, total - n * per))
        check(not dead, "%d events dead-lettered as repeated seqs: %s" % (len(dead), dead[:5]))
        check(sub.count() == total, "%d events published twice (nothing failed)" %
              (sub.count() - total))
        for eid, seqs in per_entity(sub.snapshot()).items():
            check(seqs == sorted(seqs), "%s delivered out of order: %s" % (eid, seqs))
    finally:
        stop_writing.set()
        relay.stop()
        sub.close()


def test_sweep_forgets_cleared_entities():
    """A sweep keeps in memory the entities whose events are buffered or in flight, not
    every entity it has swept. The new stream's open, applied while the sweep's first steps
    left room in the buffer, used to put the relay in "verifying" mode (nothing evicted)
    until the stream caught up, which waited for room the sweep took first: a 1M-event
    backlog over 100k entities ended its sweep with all 100k in memory (+28 MiB)."""
    dbname, cname, rname = names("sweepmem")
    coll = client[dbname][cname]
    # A sweep step takes up to 200 documents: 600 events here, below the limit (so the
    # stream's open is applied early) and above a clear's 500 (so the sweep fills the
    # buffer before the stream gets room again).
    n, per, limit = 4000, 3, 2000
    coll.insert_many([{"_id": "m%04d" % i, "name": "x", "version": Int64(1),
                       "eventSeq": Int64(per), "events": [event(s + 1) for s in range(per)]}
                      for i in range(n)])
    sub = Subscriber("outbox/%s/#" % cname)
    port = free_port()
    relay = Relay(RELAY_BIN, dbname, [cname], rname, ["--max-buffered-events", str(limit),
                                                      "--metrics-listen", "127.0.0.1:%d" % port])
    try:
        check(relay.wait_log("sweep done", 120), "the sweep did not finish")
        done = re.search(r"sweep done; (\d+) events pending in (\d+) entities", relay.log_text())
        check(done, "no counts in the sweep's last line")
        events, entities = int(done.group(1)), int(done.group(2))
        print("  %d entities in memory when the sweep ended, holding %d events (%d swept)" %
              (entities, events, n))
        # Nothing else keeps an entity here (no writes while it sweeps): each one in memory
        # holds at least one buffered event.
        check(entities <= events, "%d entities in memory for %d buffered events" %
              (entities, events))
        check(wait_until(lambda: sub.count() >= n * per, 60),
              "only %d of %d events arrived" % (sub.count(), n * per))
        check(wait_cleared(coll), "not cleared")
        check(wait_until(lambda: metric(port, "outbox_relay_entities") == 0, 20),
              "entities left in memory once everything is cleared: %s" %
              metric(port, "outbox_relay_entities"))
    finally:
        relay.stop()
        sub.close()


def test_history_lost_286():
    """The checkpointed token fell out of the server's bounded history: 286, then a sweep
    that delivers every pending event. Needs test-mongod with a small --oplog-size."""
    if not has_small_oplog():
        return
    dbname, cname, rname = names("h286")
    coll = client[dbname][cname]
    ents = Entities(coll)
    sub = Subscriber("outbox/%s/#" % cname)
    relay = Relay(RELAY_BIN, dbname, [cname], rname)
    try:
        check(relay.wait_log("change stream open"), "relay did not open its stream")
        ents.create("h0", 1)
        check(wait_until(lambda: sub.count() >= 1, 20), "first event did not arrive")
        check(wait_cleared(coll), "first event not cleared")
        time.sleep(0.5)
        check(relay.stop() == 0, "relay did not exit 0")
        overflow_history(dbname)
        for i in range(10):
            ents.create("h%d" % (i + 1), 2)
        relay = Relay(RELAY_BIN, dbname, [cname], rname)
        check(wait_until(lambda: sub.count() >= 21, 30), "sweep after 286 did not deliver all")
        check(wait_cleared(coll), "not cleared after 286")
        check("history is gone" in relay.log_text(), "no history-loss line in the log")
    finally:
        relay.stop()
        sub.close()


def test_history_lost_while_draining():
    """The stream falls behind a bounded history again and again (286) while writers keep
    appending and the relay's buffer is full: each loss starts a sweep, whose cursor holds
    copies of documents whose buffered events are published and cleared before the sweep
    gets to them. Everything arrives, in order per entity, and nothing is dead-lettered.
    Needs test-mongod with a small --oplog-size."""
    if not has_small_oplog():
        return
    dbname, cname, rname = names("h286load")
    coll = client[dbname][cname]
    ents = Entities(coll)
    sub = Subscriber("outbox/%s/#" % cname)
    n = 150
    for i in range(n):
        ents.create("d%03d" % i, 5)
    relay = Relay(RELAY_BIN, dbname, [cname], rname,
                  ["--max-buffered-events", "200", "--inflight-window", "16"])
    try:
        check(relay.wait_log("change stream open"), "relay did not open its stream")
        # A round of 150 commits outruns the 50-change history: the relay is stopped during
        # the first one, so it loses its history however fast the machine is. The rounds
        # after it, back to back for 4 s, keep its buffer full while it sweeps (that is when
        # a sweep's copies go stale; on a fast machine the stream loses its history again).
        relay.proc.send_signal(signal.SIGSTOP)
        deadline = time.time() + 4
        while time.time() < deadline:
            for i in range(n):
                ents.append("d%03d" % i, 2)
            relay.proc.send_signal(signal.SIGCONT)
        total = sum(len(ids) for ids in ents.ids.values())
        arrived = lambda: {ce["id"] for _, ce, _ in decode(sub.snapshot())}
        if not wait_until(lambda: len(arrived()) >= total, 90):
            got = arrived()
            missing = {eid: [i for i in ids if i not in got] for eid, ids in ents.ids.items()}
            missing = {eid: ids for eid, ids in missing.items() if ids}
            pending = coll.count_documents({"events.0": {"$exists": True}})
            check(False, "%d of %d events arrived (%d messages, %d subscriber connects), "
                  "%d documents not cleared; missing %s" %
                  (len(got), total, sub.count(), sub.connects, pending,
                   list(missing.items())[:3]))
        check(wait_cleared(coll), "not cleared")
        losses = relay.log_text().count("history is gone")
        dead = dead_letters(coll)
        print("  %d events, %d messages, %d history losses" % (total, sub.count(), losses))
        check(losses > 0, "the stream never lost its history: the test proves nothing")
        check(not dead, "%d events dead-lettered as repeated seqs: %s" % (len(dead), dead[:5]))
        for eid, seqs in per_entity(sub.snapshot()).items():
            first = list(dict.fromkeys(seqs))
            check(first == sorted(first), "%s delivered out of order: %s" % (eid, seqs))
    finally:
        relay.proc.send_signal(signal.SIGCONT)
        relay.stop()
        sub.close()


def test_appends_behind_a_lost_history():
    """Appends made while the relay was away are gone from the stream's history, and the next
    ones arrive by the new stream before the sweep reaches their documents. "zz" is buffered
    when the history is lost: its change starts above the seq after its last, so the relay
    reads the document, where the missed event waits. "zy" is unknown to the relay: its
    partition is fresh again during the sweep, so it is read, not taken from the change.
    Before, the missed events were dead-lettered as "not above the last seq" when the sweep
    got to them (and "zy" published 4001 before 4000). Needs test-mongod with a small
    --oplog-size and our own mosquitto."""
    broker = pausable_broker()
    if broker is None:
        return
    dbname, cname, rname = names("gap")
    coll = client[dbname][cname]
    ents = Entities(coll)
    sub = Subscriber("outbox/%s/#" % cname)
    port = free_port()
    relay = Relay(RELAY_BIN, dbname, [cname], rname, ["--max-buffered-events", "5000",
                                                      "--metrics-listen", "127.0.0.1:%d" % port])
    n = 2000
    try:
        check(relay.wait_log("change stream open"), "relay did not open its stream")
        # The broker stops answering: every event stays buffered, so the relay holds these
        # entities when its history is lost, and the sweep reads the n others afresh before
        # it gets to "zy" and "zz" (last by _id, eventSeq and insertion), while the stream
        # goes on.
        os.kill(broker, signal.SIGSTOP)
        for i in range(n):
            ents.create("a%04d" % i, 1)
        ents.create("zz", events=[event(5000)], event_seq=5000)
        check(wait_until(lambda: metric(port, "outbox_relay_buffered_events") == n + 1, 30),
              "the relay did not take the %d events" % (n + 1))
        relay.proc.send_signal(signal.SIGSTOP)
        time.sleep(0.2)
        ents.append("a0000", 1)  # answers the relay's waiting getMore, if it has one
        time.sleep(0.2)
        ents.append("zz", 1)  # 5001 and 4000: their changes fall out of the history
        ents.create("zy", events=[event(4000)], event_seq=4000)
        overflow_history(dbname)
        relay.proc.send_signal(signal.SIGCONT)
        check(wait_until(lambda: relay.log_text().count("sweeping for pending events") >= 2,
                         20), "the history loss did not start a sweep")
        ents.append("zz", 1)  # 5002 and 4001: the stream has them before the sweep
        ents.append("zy", 1)
        time.sleep(0.5)
        os.kill(broker, signal.SIGCONT)
        total = n + 6
        arrived = wait_until(lambda: sub.count() >= total, 60)
        dead = dead_letters(coll)
        check(not dead, "events dead-lettered as repeated seqs: %s" % dead)
        check(arrived, "only %d of %d events arrived" % (sub.count(), total))
        check(wait_cleared(coll), "not cleared")
        got = per_entity(sub.snapshot())
        for eid, want in (("zz", [5000, 5001, 5002]), ("zy", [4000, 4001])):
            check(list(dict.fromkeys(got[eid])) == want, "%s delivered %s" % (eid, got[eid]))
    finally:
        os.kill(broker, signal.SIGCONT)
        relay.proc.send_signal(signal.SIGCONT)
        relay.stop()
        sub.close()


def test_sweep_copy_older_than_the_stream():
    """A sweep's cursor fetches documents a batch before it uses them, and meanwhile the
    relay may publish and clear events a copy still shows. Here the copies of "x" (buffered
    when the history is lost: the table holds it as the sweep begins), "f" (likewise) and
    "y" (read by the stream while the sweep runs) are fetched while their events are in
    flight to a stopped broker, and used after those events were acknowledged and cleared.
    The sweep must read such entities afresh: not publish their events a second time (the
    table forgot them once cleared) nor take them for repeated seqs (the table still knows
    them; the move to the dead letters then finds nothing to move, so the test counts the
    relay's attempts with the failCommand fail point). Needs test-mongod with a small
    --oplog-size and our own mosquitto."""
    broker = pausable_broker()
    if broker is None:
        return
    dbname, cname, rname = names("stalecopy")
    coll = client[dbname][cname]
    ents = Entities(coll)
    sub = Subscriber("outbox/%s/#" % cname)
    port = free_port()
    # The sweep's order (insertion order on test-mongod, eventSeq order by the index on
    # MongoDB; the same here): b0-b3, x, c0-c2, y, then f. Nothing is pending yet.
    fill, after_x = ["b%d" % i for i in range(4)], ["c%d" % i for i in range(3)]
    for base, eid in enumerate(fill + ["x"] + after_x + ["y"]):
        ents.create(eid, events=[], event_seq=100 * (base + 1))
    # The bound stops the sweep in its first batch right before x: x, f, y and the b hold
    # one event each, in flight to a broker that does not answer. When it answers, x, f
    # and y (published first) are cleared before the sweep has room to go on, and the c
    # keep it from reaching y before y's clear. One event each: an entity publishes its
    # next event only after the previous one's acknowledgement.
    bound = 7
    relay = Relay(RELAY_BIN, dbname, [cname], rname,
                  ["--max-buffered-events", str(bound), "--inflight-window", str(bound),
                   "--metrics-listen", "127.0.0.1:%d" % port])
    buffered = lambda: metric(port, "outbox_relay_buffered_events")
    admin = client.admin
    try:
        check(relay.wait_log("sweep done") and relay.wait_log("connected to "),
              "the relay did not start")
        os.kill(broker, signal.SIGSTOP)
        ents.append("x", 1)
        check(wait_until(lambda: buffered() == 1, 30), "the relay did not take x's event")
        relay.proc.send_signal(signal.SIGSTOP)
        time.sleep(0.2)
        ents.create("f", events=[event(1001)], event_seq=1001)  # answers a waiting getMore
        time.sleep(0.2)
        for eid in fill + after_x:  # lost with the history: the sweep's copies are all
            ents.append(eid, 1)     # the relay gets of these
        overflow_history(dbname)
        # The sweep's first query waits, then fails, so the main thread turns to the stream
        # before the sweep opens its cursor again: the stream takes y's change (a read of
        # y) then. Later the sweep fills the buffer first, and the stream waits for room.
        admin.command("configureFailPoint", "failCommand", mode={"times": 1},
                      data={"failCommands": ["find"], "appName": "outbox-relay",
                            "blockConnection": True, "blockTimeMS": 3000, "errorCode": 96})
        relay.proc.send_signal(signal.SIGCONT)
        check(wait_until(lambda: relay.log_text().count("sweeping for pending events") >= 2,
                         20), "the history loss did not start a sweep")
        ents.append("y", 1)
        check(wait_until(lambda: buffered() == bound, 30),
              "the sweep did not fill the buffer (%s of %d)" % (buffered(), bound))
        # From now on the fail point only counts the relay's updates: on its main client
        # these are the moves of events to the dead letters.
        failed_finds = admin.command("configureFailPoint", "failCommand", mode="alwaysOn",
                                     data={"failCommands": ["update"], "appName": "outbox-relay",
                                           "blockConnection": True, "blockTimeMS": 1})["count"]
        check(failed_finds == 1, "the sweep's query failed %d times, not once" % failed_finds)
        os.kill(broker, signal.SIGCONT)
        total = sum(len(ids) for ids in ents.ids.values())
        arrived = wait_until(lambda: sub.count() >= total, 30)
        check(wait_until(lambda: relay.log_text().count("sweep done") >= 2, 30),
              "the sweep did not end")
        dead = dead_letters(coll)
        check(not dead, "events dead-lettered as repeated seqs: %s" % dead)
        moves = admin.command("configureFailPoint", "failCommand", mode="off")["count"]
        check(moves == 0, "%d published events taken for repeated seqs (the relay tried to "
              "move them to the dead letters)" % moves)
        check(arrived, "only %d of %d events arrived" % (sub.count(), total))
        check(wait_cleared(coll), "not cleared")
        time.sleep(0.5)  # an event published twice has come by now
        order = [ce["subject"] for _, ce, _ in decode(sub.snapshot())]
        # The scene took place: x's event was in flight when the history was lost, and y's
        # before the sweep took the b (else the sweep took y's copy first, and it was new).
        check(order[0] == "x" and order.index("y") < order.index("b0"),
              "not the expected publishing order: %s" % order)
        got = per_entity(sub.snapshot())
        wrong = {eid: got.get(eid) for eid in ents.ids
                 if got.get(eid) != list(range(ents.seq[eid] - len(ents.ids[eid]) + 1,
                                               ents.seq[eid] + 1))}
        check(not wrong, "not delivered once each, in order: %s" % wrong)
        check(sub.connects == 1, "the subscriber reconnected: duplicates prove nothing")
    finally:
        admin.command("configureFailPoint", "failCommand", mode="off")
        os.kill(broker, signal.SIGCONT)
        relay.proc.send_signal(signal.SIGCONT)
        relay.stop()
        sub.close()


def test_hostile_ids_and_poison():
    """Ids that try to break topics stay inside one level; malformed events and oversized
    messages go to deadLetters with a reason; valid events around them still flow."""
    dbname, cname, rname = names("poison")
    coll = client[dbname][cname]
    ents = Entities(coll)
    sub = Subscriber("outbox/%s/#" % cname)
    relay = Relay(RELAY_BIN, dbname, [cname], rname, ["--max-message-bytes", "4096"])
    hostile = ["a/b", "+", "#", "x\x00y", "%2F", "sp ace", "\x1b[31m", 42, Int64(2 ** 40),
               {"k": "v/w"}]
    try:
        check(relay.wait_log("change stream open"), "relay did not open its stream")
        for h in hostile:
            ents.create(h, 2)
        bad = [{"seq": Int64(2), "type": "T", "data": {}},               # no id
               "junk",                                                    # not a document
               {"id": "bad-type", "seq": Int64(3), "type": "a b", "data": {}},
               {"id": "bad-data", "seq": Int64(4), "type": "T", "data": 5}]
        ents.create("p1", events=[event(1)] + bad + [event(5)], event_seq=5)
        ents.append("p1", events=[event(6, data={"big": "x" * 8000})])
        ents.append("p1", events=[event(7)])
        expected = 2 * len(hostile) + 3
        check(wait_until(lambda: sub.count() >= expected, 30),
              "only %d of %d messages arrived" % (sub.count(), expected))
        check(wait_cleared(coll), "events (or poison) left in documents")
        for topic, _, _ in sub.snapshot():
            rest = topic[len("outbox/%s/" % cname):]
            check(topic.startswith("outbox/%s/" % cname) and "/" not in rest and
                  "+" not in topic and "#" not in topic and "\x00" not in topic,
                  "topic escaped its template: %r" % topic)
        p1 = coll.find_one({"_id": "p1"})
        dead = p1.get("deadLetters", [])
        check(len(dead) == 5, "expected 5 dead letters, got %d: %s" % (len(dead), dead))
        check(all(d.get("reason") for d in dead), "dead letter without reason")
        seqs = per_entity(sub.snapshot()).get("p1")
        check(seqs == [1, 5, 7], "p1 delivered %s" % seqs)
        check(p1["version"] == 3 and p1["eventSeq"] == 7, "relay touched p1's bookkeeping")
    finally:
        relay.stop()
        sub.close()


def test_mongodb_disconnect_failpoint():
    """The server drops the change stream's connection (failpoint): the relay resumes and
    nothing is lost."""
    dbname, cname, rname = names("failpt")
    coll = client[dbname][cname]
    ents = Entities(coll)
    sub = Subscriber("outbox/%s/#" % cname)
    relay = Relay(RELAY_BIN, dbname, [cname], rname)
    admin = client.admin
    try:
        check(relay.wait_log("change stream open"), "relay did not open its stream")
        for i in range(5):
            ents.create("f%d" % i, 1)
        check(wait_until(lambda: sub.count() >= 5, 20), "first events did not arrive")
        admin.command("configureFailPoint", "failCommand", mode={"times": 2},
                      data={"failCommands": ["getMore"], "closeConnection": True})
        for i in range(5):
            ents.append("f%d" % i, 3)
        check(wait_until(lambda: sub.count() >= 20, 30),
              "after the disconnect only %d of 20 arrived" % sub.count())
        check(wait_cleared(coll), "not cleared after the disconnect")
        for eid, seqs in per_entity(sub.snapshot()).items():
            check(seqs == sorted(seqs) and set(seqs) == {1, 2, 3, 4}, "%s: %s" % (eid, seqs))
    finally:
        admin.command("configureFailPoint", "failCommand", mode="off")
        relay.stop()
        sub.close()


def test_protocol_variants():
    """MQTT 3.1.1 with QoS 2, and MQTT 5 binary mode (attributes as user properties, data as
    the payload): everything arrives in order and is cleared."""
    dbname, cname, rname = names("variants")
    coll = client[dbname][cname]
    ents = Entities(coll)
    sub = Subscriber("outbox/%s/#" % cname)
    relay = Relay(RELAY_BIN, dbname, [cname], rname + "-v4",
                  ["--mqtt-version", "4", "--qos", "2", "--topic", "outbox/{collection}/{type}/{id}"])
    try:
        check(relay.wait_log("change stream open"), "relay did not open its stream")
        for i in range(5):
            ents.create("v%d" % i, 3)
        check(wait_until(lambda: sub.count() >= 15, 30), "3.1.1/QoS 2 messages did not arrive")
        check(wait_cleared(coll), "3.1.1/QoS 2 events not cleared")
        check(relay.stop() == 0, "relay did not exit 0")
        for topic, _, props in sub.snapshot():
            check(topic.startswith("outbox/%s/Changed/" % cname), "topic %s" % topic)
            check("event-id" not in props, "MQTT 3.1.1 message with user properties")
        for eid, seqs in per_entity(sub.snapshot()).items():
            check(seqs == [1, 2, 3], "%s: %s" % (eid, seqs))
        first = sub.count()
        relay = Relay(RELAY_BIN, dbname, [cname], rname + "-bin", ["--payload-mode", "binary"])
        check(relay.wait_log("change stream open"), "relay did not open its stream")
        for i in range(5):
            ents.append("v%d" % i, 2)
        check(wait_until(lambda: sub.count() >= first + 10, 30), "binary messages did not arrive")
        check(wait_cleared(coll), "binary-mode events not cleared")
        for topic, payload, props in sub.snapshot()[first:]:
            data = json.loads(payload.decode("utf-8"))
            check(data.get("n") == int(props.get("seq", "0")), "payload %s props %s" % (data, props))
            for key in ("specversion", "id", "source", "type", "subject", "time"):
                check(key in props, "binary mode lacks %s: %s" % (key, props))
            check(props["$content-type"] == "application/json", "content type %s" % props)
    finally:
        relay.stop()
        sub.close()


def test_user_properties():
    """--user-properties: none leaves structured messages without user properties (the content
    type stays), a list sends exactly the listed ones, and binary mode keeps the CloudEvents
    attributes and seq whatever the setting."""
    dbname, cname, rname = names("userprops")
    coll = client[dbname][cname]
    ents = Entities(coll)
    sub = Subscriber("outbox/%s/#" % cname)
    ce_attrs = {"specversion", "id", "source", "type", "subject", "time", "seq"}
    runs = [(["--user-properties", "none"], set()),
            (["--user-properties", "seq,event-id"], {"event-id", "seq"}),
            (["--user-properties", "none", "--payload-mode", "binary"], ce_attrs),
            (["--user-properties", "entity-id", "--payload-mode", "binary"],
             ce_attrs | {"entity-id"})]
    relay = None
    try:
        for i, (args, want) in enumerate(runs):
            first = sub.count()
            relay = Relay(RELAY_BIN, dbname, [cname], "%s-%d" % (rname, i), args)
            check(relay.wait_log("change stream open"), "relay did not open its stream")
            ents.create("u%d" % i, 3)
            check(wait_until(lambda: sub.count() >= first + 3, 30), "%s: no messages" % args)
            check(wait_cleared(coll), "%s: events not cleared" % args)
            check(relay.stop() == 0, "relay did not exit 0")
            for _, payload, props in sub.snapshot()[first:]:
                got = set(k for k in props if not k.startswith("$"))
                check(got == want, "%s: user properties %s, expected %s" % (args, got, want))
                binary = "binary" in args
                check(props["$content-type"] == ("application/json" if binary else
                                                 "application/cloudevents+json"),
                      "%s: content type %s" % (args, props))
                if not binary:
                    ce = json.loads(payload.decode("utf-8"))
                    check(ce["subject"] == "u%d" % i and ce["seq"] >= 1, "payload %s" % ce)
    finally:
        if relay:
            relay.stop()
        sub.close()


def test_small_buffer_backpressure():
    """With a tiny buffer and window the relay stops reading the stream while it is full,
    and still delivers everything, in order (backpressure, not a stall or a loss)."""
    dbname, cname, rname = names("buffer")
    coll = client[dbname][cname]
    ents = Entities(coll)
    sub = Subscriber("outbox/%s/#" % cname)
    relay = Relay(RELAY_BIN, dbname, [cname], rname,
                  ["--max-buffered-events", "7", "--inflight-window", "3",
                   "--clear-batch-size", "2"])
    try:
        check(relay.wait_log("change stream open"), "relay did not open its stream")
        for i in range(30):
            ents.create("q%d" % i, 4)
        for i in range(30):
            ents.append("q%d" % i, 3)
        check(wait_until(lambda: sub.count() >= 210, 60),
              "only %d of 210 arrived" % sub.count())
        check(wait_cleared(coll), "not cleared")
        for eid, seqs in per_entity(sub.snapshot()).items():
            check(seqs == list(range(1, 8)), "%s: %s" % (eid, seqs))
    finally:
        relay.stop()
        sub.close()


def test_byte_bound_backpressure():
    """Large events under the smallest --max-buffered-bytes (1 MiB): sweep documents of
    ~500 KiB, one of 1.2 MB (above the bound on its own: it must still get in), then appends
    through the stream. Everything arrives in order and is cleared: the byte bound pauses
    reading, it never stalls it."""
    dbname, cname, rname = names("bytes")
    coll = client[dbname][cname]
    ents = Entities(coll)
    sub = Subscriber("outbox/%s/#" % cname)
    big = lambda seq: event(seq, data={"n": seq, "pad": "x" * 100000})
    for i in range(20):
        ents.create("b%d" % i, events=[big(s) for s in range(1, 6)])
    ents.create("huge", events=[big(s) for s in range(1, 13)])
    relay = Relay(RELAY_BIN, dbname, [cname], rname, ["--max-buffered-bytes", "1048576"])
    try:
        check(wait_until(lambda: sub.count() >= 112, 60),
              "sweep: only %d of 112 arrived" % sub.count())
        check(relay.wait_log("change stream open"), "relay did not open its stream")
        for i in range(20):
            ents.append("b%d" % i, events=[big(s) for s in range(6, 9)])
        check(wait_until(lambda: sub.count() >= 172, 60),
              "stream: only %d of 172 arrived" % sub.count())
        check(wait_cleared(coll), "not cleared")
        got = per_entity(sub.snapshot())
        check(got.get("huge") == list(range(1, 13)), "huge: %s" % got.get("huge"))
        for i in range(20):
            check(got.get("b%d" % i) == list(range(1, 9)), "b%d: %s" % (i, got.get("b%d" % i)))
    finally:
        relay.stop()
        sub.close()


def test_two_relays_same_name():
    """An operator starts two relays with the same name: events may arrive twice, but none
    is lost or wrongly cleared, and each copy of an entity's stream stays in order."""
    dbname, cname, rname = names("twins")
    coll = client[dbname][cname]
    ents = Entities(coll)
    sub = Subscriber("outbox/%s/#" % cname)
    a = Relay(RELAY_BIN, dbname, [cname], rname)
    b = Relay(RELAY_BIN, dbname, [cname], rname, ["--client-id", rname + "-b"])
    try:
        check(a.wait_log("change stream open") and b.wait_log("change stream open"),
              "relays did not open their streams")
        for i in range(10):
            ents.create("t%d" % i, 2)
        for _ in range(5):
            for i in range(10):
                ents.append("t%d" % i, 2)
        check(wait_cleared(coll), "not cleared with two relays")
        expected = {i for ids in ents.ids.values() for i in ids}
        check(wait_until(lambda: expected <= {json.loads(p)["id"] for _, p, _ in
                                              sub.snapshot()}, 30), "events lost with two relays")
        for d in coll.find():
            check(d["eventSeq"] == 12 and d["version"] == 6 and not d.get("deadLetters"),
                  "bookkeeping changed: %s" % d)
        check(a.stop() == 0 and b.stop() == 0, "relays did not exit 0")
    finally:
        a.stop()
        b.stop()
        sub.close()


RESTARTED_BROKERS = []


def stop_restarted_brokers():
    """The fixture only stops the broker it started: stop the ones this script started."""
    for proc in RESTARTED_BROKERS:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def restart_broker(persistent):
    """Stops the fixture's mosquitto and starts one on the same port (with persistence when
    asked, so a subscriber's session and queued messages survive the next restart)."""
    conf = os.environ["OUTBOX_TEST_MOSQUITTO_CONF"]
    pid = int(os.environ["OUTBOX_TEST_MOSQUITTO_PID"])
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    for _ in range(100):
        try:
            os.kill(pid, 0)
            time.sleep(0.05)
        except ProcessLookupError:
            break
    if persistent and "persistence true" not in open(conf).read():
        text = open(conf).read().replace("persistence false", "persistence true\n"
                                         "persistence_location %s/" % WORKDIR)
        with open(conf, "w") as f:
            f.write(text)
    log = open(os.path.join(WORKDIR, "mosquitto-restarted.log"), "ab")
    binary = "mosquitto" if any(os.access(os.path.join(d, "mosquitto"), os.X_OK) for d in
                                os.environ.get("PATH", "").split(":")) else "/usr/sbin/mosquitto"
    proc = subprocess.Popen([binary, "-c", conf], stdout=log, stderr=log)
    RESTARTED_BROKERS.append(proc)
    os.environ["OUTBOX_TEST_MOSQUITTO_PID"] = str(proc.pid)
    time.sleep(0.5)
    return proc


def test_broker_restart():
    """mosquitto restarts while events flow: nothing is lost (the subscriber keeps a
    persistent session across the restart, so what the broker accepted reaches it)."""
    requires("fixture broker")
    dbname, cname, rname = names("broker")
    coll = client[dbname][cname]
    ents = Entities(coll)
    restart_broker(persistent=True)
    sub = Subscriber("outbox/%s/#" % cname, client_id="sub-broker-%s" % RUN, clean=False)
    relay = Relay(RELAY_BIN, dbname, [cname], rname)
    try:
        check(relay.wait_log("change stream open"), "relay did not open its stream")
        for i in range(10):
            ents.create("b%d" % i, 1)
        check(wait_until(lambda: sub.count() >= 10, 20), "first events did not arrive")
        for i in range(10):
            ents.append("b%d" % i, 5)
        restart_broker(persistent=True)
        for i in range(10):
            ents.append("b%d" % i, 4)
        check(wait_cleared(coll, 60), "not cleared after the broker restart")
        expected = {i for ids in ents.ids.values() for i in ids}
        check(wait_until(lambda: expected <= {json.loads(p)["id"] for _, p, _ in
                                              sub.snapshot()}, 30),
              "events lost across the broker restart")
        for eid, seqs in per_entity(sub.snapshot()).items():
            firsts = []
            for s in seqs:  # duplicates are fine; an event before its predecessor is not
                if s not in firsts:
                    firsts.append(s)
            check(firsts == sorted(firsts), "%s out of order: %s" % (eid, seqs))
    finally:
        relay.stop()
        sub.close()


def test_failed_clears_are_retried():
    """The clearing update fails (a server error, then dropped connections) while the relay is
    otherwise idle: the clears are retried after a backoff, every event leaves its document,
    and the relay neither crashes nor waits for new events to try again (chaos F1, F2)."""
    dbname, cname, rname = names("clearfail")
    coll = client[dbname][cname]
    ents = Entities(coll)
    sub = Subscriber("outbox/%s/#" % cname)
    relay = Relay(RELAY_BIN, dbname, [cname], rname)
    admin = client.admin
    try:
        check(relay.wait_log("change stream open"), "relay did not open its stream")
        for round_, data in enumerate([{"errorCode": 91},
                                       {"closeConnection": True}]):
            admin.command("configureFailPoint", "failCommand", mode={"times": 3},
                          data=dict(data, failCommands=["update"],
                                    appName="outbox-relay-clear"))
            # More entities than a statement array starts with, so a retried batch grows.
            for i in range(100):
                if round_ == 0:
                    ents.create("c%d" % i, 2)
                else:
                    ents.append("c%d" % i, 2)
            want = 200 * (round_ + 1)
            check(wait_until(lambda: sub.count() >= want, 30),
                  "round %d: only %d of %d messages arrived" % (round_, sub.count(), want))
            # Nothing new is written from here on: only a scheduled retry can clear them.
            check(wait_until(lambda: ents.pending() == 0, 20),
                  "round %d (%s): %d acknowledged events never cleared" %
                  (round_, data, ents.pending()))
            check(relay.proc.poll() is None, "relay died after failed clears")
            admin.command("configureFailPoint", "failCommand", mode="off")
        check("clearing" in relay.log_text(), "the failpoint did not hit the clears")
        for eid, seqs in per_entity(sub.snapshot()).items():
            firsts = []
            for x in seqs:
                if x not in firsts:
                    firsts.append(x)
            check(firsts == [1, 2, 3, 4], "%s: %s" % (eid, seqs))
        check(relay.stop() == 0, "relay did not exit 0")
    finally:
        admin.command("configureFailPoint", "failCommand", mode="off")
        relay.stop()
        sub.close()


def _raw_doc(eid_bytes, data_bytes, event_id):
    """A document (one event) whose _id and event data string are raw bytes, possibly not
    UTF-8: pymongo cannot build such strings, so the BSON is written by hand."""
    def cstring(k):
        return k.encode() + b"\x00"

    def string(k, raw):
        return b"\x02" + cstring(k) + (len(raw) + 1).to_bytes(4, "little") + raw + b"\x00"

    def doc(body):
        return (len(body) + 5).to_bytes(4, "little") + body + b"\x00"

    one = (1).to_bytes(8, "little")
    evt = doc(string("id", event_id.encode()) + b"\x12" + cstring("seq") + one +
              string("type", b"T") + b"\x03" + cstring("data") + doc(string("text", data_bytes)))
    body = (string("_id", eid_bytes) + b"\x12" + cstring("version") + one +
            b"\x12" + cstring("eventSeq") + one + b"\x04" + cstring("events") +
            doc(b"\x03" + cstring("0") + evt))
    from bson.raw_bson import RawBSONDocument
    return RawBSONDocument(doc(body))


def test_unencodable_events_are_dead_letters():
    """Events that cannot be put into an MQTT message are dead-lettered with a reason before
    anything is sent (no empty payload, no malformed packet): a 64 KiB entity id (topic and
    entity-id property over MQTT's 65,535-byte string limit), invalid UTF-8 in an id or in
    event data. A document whose events field is not an array is named in one warning. The
    valid events around them still flow (chaos F4, F5, F6)."""
    import uuid
    import bson as bsonlib
    dbname, cname, rname = names("unencodable")
    coll = client[dbname][cname]
    ents = Entities(coll)
    sub = Subscriber("outbox/%s/#" % cname)
    # The id stays out of the topic, so only the entity-id user property is too long.
    relay = Relay(RELAY_BIN, dbname, [cname], rname, ["--topic", "outbox/{collection}/{type}"])
    try:
        check(relay.wait_log("change stream open"), "relay did not open its stream")
        long_id = "L" * 65536
        ents.create(long_id, 1)
        ev_bad_id, ev_bad_data = str(uuid.uuid4()), str(uuid.uuid4())
        coll.insert_one(_raw_doc(b"bad\xff\xfeid", b"ok", ev_bad_id))
        coll.insert_one(_raw_doc(b"bad-utf8-data", b"\xc3\x28\xff", ev_bad_data))
        coll.insert_one({"_id": "na-str", "version": Int64(1), "eventSeq": Int64(1),
                         "events": "junk"})
        coll.insert_one({"_id": "na-doc", "version": Int64(1), "eventSeq": Int64(1),
                         "events": {"0": event(1)}})
        coll.update_one({"_id": "na-str"}, {"$set": {"events": "junk2"},
                                            "$inc": {"eventSeq": Int64(1)}})
        ents.create("good", 3)
        raw = coll.with_options(codec_options=bsonlib.codec_options.CodecOptions(
            unicode_decode_error_handler="replace"))

        def dead():
            out = {}
            for d in raw.find({"deadLetters.0": {"$exists": True}}):
                for x in d["deadLetters"]:
                    out[x["event"]["id"]] = x.get("reason")
            return out
        wanted = {ents.ids[long_id][0], ev_bad_id, ev_bad_data}
        check(wait_until(lambda: wanted <= set(dead()), 20),
              "not dead-lettered: %s (dead letters: %s)" % (wanted - set(dead()), dead()))
        check(all(dead()[i] for i in wanted), "a dead letter without a reason: %s" % dead())
        check("65535" in dead()[ents.ids[long_id][0]], "long id: %s" % dead())
        check(wait_until(lambda: sub.count() >= 3, 20), "the valid events did not arrive")
        time.sleep(0.5)
        for topic, payload, _ in sub.snapshot():
            check(payload, "a message with an empty payload on %r" % topic[:80])
            check(json.loads(payload.decode("utf-8"))["subject"] == "good",
                  "published something other than the valid events: %r" % topic[:80])
        check(per_entity(sub.snapshot()) == {"good": [1, 2, 3]}, "good: %s" %
              per_entity(sub.snapshot()))
        check(wait_until(lambda: all(len(d.get("events", [])) == 0
                                     for d in raw.find({"_id": {"$nin": ["na-str", "na-doc"]}})),
                         10), "events left pending")
        check(relay.wait_log("na-str", 10) and relay.wait_log("na-doc", 10),
              "no warning names the documents whose events are not an array")
        text = relay.log_text()
        for eid in ("na-str", "na-doc"):
            lines = [ln for ln in text.splitlines() if eid in ln and "WARN" in ln]
            check(len(lines) == 1, "%s reported %d times: %s" % (eid, len(lines), lines))
            d = coll.find_one({"_id": eid})
            check(d["version"] == 1 and (isinstance(d["events"], dict) if eid == "na-doc"
                                         else d["events"] == "junk2"),
                  "relay changed %s: %s" % (eid, d))
        check(relay.proc.poll() is None, "relay died")
        check(relay.stop() == 0, "relay did not exit 0")
    finally:
        relay.stop()
        sub.close()


def test_schema_enforced():
    """With the stored contract installed as a strict validator (liboutbox's
    outbox_collection_ensure_schema() through lib-schema-tool), the relay's own writes still
    pass: events are published and cleared, an oversized one is dead-lettered; a malformed
    commit from another writer is refused by the server and never reaches the relay."""
    tool = os.environ.get("OUTBOX_TEST_SCHEMA_TOOL")
    if not tool:
        print("skip test_schema_enforced: OUTBOX_TEST_SCHEMA_TOOL is not set")
        return
    dbname, cname, rname = names("schema")
    subprocess.run([tool, "ensure", dbname, cname, '{"validationLevel": "strict"}'],
                   check=True)
    coll = client[dbname][cname]
    ents = Entities(coll)
    sub = Subscriber("outbox/%s/#" % cname)
    relay = Relay(RELAY_BIN, dbname, [cname], rname, ["--max-message-bytes", "4096"])
    try:
        check(relay.wait_log("change stream open"), "relay did not open its stream")
        for i in range(3):
            ents.create("s%d" % i, 2)
        ents.append("s0", events=[event(3, data={"big": "x" * 8000})])
        ents.append("s0", events=[event(4)])
        bad = event(3)
        bad["seq"] = 3  # an int32: refused by the validator
        try:
            coll.update_one({"_id": "s1"}, {"$push": {"events": bad},
                                            "$inc": {"version": Int64(1), "eventSeq": Int64(1)}})
            raise AssertionError("a malformed commit was accepted")
        except pymongo.errors.WriteError as e:
            check(e.code == 121, "malformed commit: %s" % e.details)
        expected = 3 * 2 + 1
        check(wait_until(lambda: sub.count() >= expected, 30),
              "only %d of %d messages arrived" % (sub.count(), expected))
        check(wait_cleared(coll), "events left in documents")
        s0 = coll.find_one({"_id": "s0"})
        check(len(s0.get("deadLetters", [])) == 1, "dead letters: %s" % s0.get("deadLetters"))
        check(per_entity(sub.snapshot()).get("s0") == [1, 2, 4], "s0 delivered wrong seqs")
        check("Document failed validation" not in relay.log_text(),
              "a relay write was refused by the validator")
    finally:
        relay.stop()
        sub.close()


TESTS = [test_stream_order_and_clear, test_restart_from_checkpoint,
         test_kill9_republishes_only_the_tail, test_sweep_without_state,
         test_sweep_races_the_stream, test_sweep_forgets_cleared_entities,
         test_history_lost_286, test_history_lost_while_draining,
         test_appends_behind_a_lost_history, test_sweep_copy_older_than_the_stream,
         test_hostile_ids_and_poison,
         test_mongodb_disconnect_failpoint, test_protocol_variants, test_user_properties,
         test_small_buffer_backpressure, test_byte_bound_backpressure,
         test_two_relays_same_name,
         test_failed_clears_are_retried, test_unencodable_events_are_dead_letters,
         test_schema_enforced, test_broker_restart]


def main():
    return run_tests("relay-e2e", TESTS, sys.argv[2:], cleanup=stop_restarted_brokers)


if __name__ == "__main__":
    sys.exit(main())
