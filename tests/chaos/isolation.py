# Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
"""The `isolated_primary` chaos scenario (see replset.py for the set and the group): the
primary cut off for longer than the election timeout while writers keep writing to it, then
healed with rollback. A w:1 writer (liboutbox refuses w below majority, so this one mimics
its update with pymongo) and two w:"majority" chaos-writers; `testRollbackLog` tells which
of the w:1 commits were rolled back."""

import collections
import os
import threading
import time

import chaoslib as cl
import pymongo
from bson.int64 import Int64
from chaoslib import Env, check, sizes
from replset import (ELECTION_MS, MEMBERS, ReplSet, TappedGroup, delivered_ids, event_doc,
                     published_by_two, wait_all_owned)


# One acknowledged w:1 commit: when it was sent and acknowledged (time.time()), the entity,
# the version it set (unique per entity: what the rollback log is matched on) and its
# events [(seq, id)].
Commit = collections.namedtuple("Commit", "sent ack entity version events")


class W1Writer:
    """A writer with w:1 on a direct connection to one member, mimicking liboutbox's update
    (version guard, eventSeq, $push of the events): liboutbox itself refuses w < majority.
    Each entity has only this writer. Records every acknowledged commit with the times it
    was sent and acknowledged; stops at the first error (the member stepped down)."""

    def __init__(self, uri, prefix, count=20):
        self.client = pymongo.MongoClient(uri, serverSelectionTimeoutMS=2000,
                                          socketTimeoutMS=5000, retryWrites=False)
        self.coll = self.client[cl.DB]["things"].with_options(
            write_concern=pymongo.WriteConcern(w=1))
        self.state = {}  # entity -> (version, eventSeq)
        self.acked = []  # Commit
        self.prefix, self.count = prefix, count  # a round's own entities: versions from 1
        self.error = None
        self.stopping = False
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def commit(self, k):
        sent = time.time()  # before the request leaves: see classify() for why it matters
        entity = "%s%d" % (self.prefix, k)
        version, seq = self.state.get(entity, (0, 0))
        evs = [event_doc(seq + 1 + j) for j in range(1 + k % 2)]
        docs = [e for _, e in evs]
        if version == 0:
            self.coll.insert_one({"_id": entity, "version": Int64(1),
                                  "eventSeq": Int64(seq + len(docs)), "events": docs})
        else:
            r = self.coll.update_one({"_id": entity, "version": Int64(version)},
                                     {"$set": {"version": Int64(version + 1),
                                               "eventSeq": Int64(seq + len(docs))},
                                      "$push": {"events": {"$each": docs}}})
            if r.matched_count != 1:
                raise RuntimeError("w:1 writer: version conflict on %s" % entity)
        self.state[entity] = (version + 1, seq + len(docs))
        self.acked.append(Commit(sent, time.time(), entity, version + 1,
                                 tuple((seq + 1 + j, evs[j][0]) for j in range(len(evs)))))

    def run(self):
        n = 0
        while not self.stopping:
            try:
                self.commit(n % self.count)
            except Exception as exc:
                self.error = exc
                cl.mark("w:1 writer stopped: %s" % exc)
                return
            n += 1
            time.sleep(0.02)

    def stop(self):
        self.stopping = True
        self.thread.join(10)
        self.client.close()


def ids_in(value, out):
    """Every string under an "id" key inside `value` (the events in a rollback record)."""
    if isinstance(value, dict):
        for k, v in value.items():
            if k == "id" and isinstance(v, str):
                out.add(v)
            else:
                ids_in(v, out)
    elif isinstance(value, list):
        for v in value:
            ids_in(v, out)
    return out


def rolled_back_commits(log):
    """{(entity, version)} of the w:1 writer's rolled-back inserts and updates. Matched on the
    version each commit sets rather than on event ids: a rolled-back clear ($pull of some
    ids) may list the events left in the array, which can be a kept commit's."""
    out = set()
    for r in log.get("rolledBack", []):
        key = r.get("documentKey", {}).get("_id")
        if not (r.get("ns", "").endswith(".things") and str(key).startswith("w1-")):
            continue
        fields = (r.get("fullDocument") if r.get("op") == "insert" else
                  r.get("updateDescription", {}).get("updatedFields")) or {}
        if "version" in fields:
            out.add((key, int(fields["version"])))
    return out


def classify(acked, before, after):
    """Splits the w:1 commits by when they were sent and acknowledged around the cut (the
    `isolate` command sent at `before`, its reply read at `after`): (on the branch, before the
    cut, raced). test-mongod runs each command under one server lock, so the cut is one point
    in the order of commands (`md_isolation_start`, tests/mongod/commands/cmd-isolation.c).
    A commit sent after `after` reached the member after that point: it went to the branch
    and must be rolled back. One acknowledged before `before` was applied before it: with no
    replication lag it is in the set's history and must stay. Any other raced the cut, and
    the client's times cannot tell on which side it landed: its ack may be read after
    `after` though the server applied it before the cut (FINDINGS.md F16), so only the
    rollback log says what became of it."""
    branch, kept, raced = [], [], []
    for c in acked:
        (branch if c.sent > after else kept if c.ack < before else raced).append(c)
    return branch, kept, raced


def rollback_summary(log):
    """{ns op: count} of the rolled-back writes."""
    out = {}
    for r in log.get("rolledBack", []):
        key = "%s %s" % (r.get("ns"), r.get("op"))
        out[key] = out.get(key, 0) + 1
    return out


def scenario_isolated_primary(opts):
    """The primary cut off for longer than the election timeout while a w:1 writer and
    w:"majority" writers keep writing to it, then healed with rollback: every majority commit
    delivered; the rolled-back w:1 writes' events never published."""
    cut_seconds = sizes(opts, 5.0, 15.0)
    rounds = sizes(opts, 1, 3)
    env = Env(opts, "isolated", members=MEMBERS, election_timeout_ms=ELECTION_MS)
    rs = group = None
    w1s = []
    rolled_ids, notes, logged = set(), [], set()
    try:
        rs = ReplSet(env)
        group = TappedGroup(env)
        wait_all_owned(env)
        env.writer("things", "a", 0, 100, 10 ** 7, 3, 10000)
        for r in range(rounds):
            p = rs.primary()
            direct = env.writer("things", "d%d-" % r, 0, 30, 10 ** 7, 2, 20000,
                                uri=env.mongod.member_uri(p))
            w1 = W1Writer(env.mongod.member_uri(p), "w1-%d-" % r)
            w1s.append(w1)
            time.sleep(1.5)
            before = time.time()
            rs.fault(p, "isolate")
            after = time.time()
            time.sleep(cut_seconds)
            # The cut lasts until the others elected a primary (after the set's election
            # timeout: 1 s here, mongod's 10 s default on a deployment given from outside).
            check(cl.wait_until(lambda: rs.primary() != p, 30),
                  "no new primary was elected while member %d was cut off" % p)
            rs.fault(p, "heal")
            w1.stop()
            direct.kill9()
            log = rs.rollback_log()
            with open(os.path.join(env.workdir, "rollback-%d.txt" % r), "w") as f:
                for rec in log.get("rolledBack", []):
                    f.write("%r\n" % (rec,))
            rolled = ids_in(log.get("rolledBack", []), set())
            logged |= rolled
            mine = list(w1.acked)
            undone = rolled_back_commits(log)
            fate = {c: (c.entity, c.version) in undone for c in mine}
            with open(os.path.join(env.workdir, "w1-commits-%d.txt" % r), "w") as f:
                f.write("cut: sent %.3f, acknowledged %.3f\n" % (before, after))
                for c in mine:
                    f.write("%.3f %.3f %s %s v%d %r\n" % (c.sent, c.ack, "rolled back"
                                                         if fate[c] else "kept", c.entity,
                                                         c.version, c.events))
            late, early, raced = classify(mine, before, after)
            check(all(fate[c] for c in late),
                  "a w:1 commit sent to the cut-off primary after the cut was not rolled back")
            check(not any(fate[c] for c in early),
                  "a w:1 commit acknowledged before the cut was rolled back")
            # One thread commits one after another: whatever the race, the commits kept come
            # first and the rolled-back ones after.
            check([fate[c] for c in mine] == sorted(fate[c] for c in mine),
                  "w:1 commits rolled back out of order (see w1-commits-%d.txt)" % r)
            check(all(eid in rolled for c in mine if fate[c] for _, eid in c.events),
                  "a rolled-back w:1 commit's record in the rollback log misses its events")
            for c in mine:
                for seq, eid in c.events:
                    if fate[c]:
                        rolled_ids.add(eid)
                    else:
                        env.ledger.add_direct("things", c.entity, seq, eid)
            notes.append("round %d: member %d cut off %.1f s; w:1 commits acknowledged %d "
                         "(%d sent during the cut, %d raced it: %d of those rolled back); "
                         "rolled back: %s" %
                         (r, p, cut_seconds, len(mine), len(late), len(raced),
                          sum(1 for c in raced if fate[c]),
                          rollback_summary(log)))
            time.sleep(1.0)
        for w in env.writers:
            w.kill9()
        env.finish_writers()
        delivered = set(delivered_ids(env))
        published = delivered & rolled_ids
        # Events of majority commits that were never acknowledged (the writer's attempt on
        # the cut-off primary waited for a majority it could not get), rolled back and not
        # committed again by a retry: a consumer got events of a commit that does not exist.
        unconfirmed = {i for _, _, ids in env.ledger.unconfirmed for i in ids}
        ghost = (delivered & logged & unconfirmed) - set(env.ledger.committed)
        both = published_by_two(group.publishes(), 3.0)  # the lease time of LEASE_OPTS
        env.figures.notes = notes + [
            "%d events of rolled-back w:1 commits: %d published; events of unacknowledged "
            "majority commits rolled back yet published: %d; partitions published by two "
            "members at once: %d %s" %
            (len(rolled_ids), len(published), len(ghost), len(both), sorted(both.items())[:3])]
        check(rolled_ids, "no w:1 write was rolled back: the scenario proves nothing")
        ok, problems = env.quiet_and_verify()
        check(ok, "; ".join(problems))
        check(not both, "partitions published by two members at once after rolled-back lease "
              "writes (FINDINGS.md F12): %s" % sorted(both))
        check(not published and not ghost,
              "%d events of rolled-back w:1 commits and %d of rolled-back unacknowledged "
              "commits were published (FINDINGS.md F8)" % (len(published), len(ghost)))
    finally:
        for w in w1s:
            w.stopping = True
        if group:
            group.close()
        if rs:
            rs.close()
        env.close()



SCENARIOS = [scenario_isolated_primary]
