# Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
"""The `isolated_primary` chaos scenario (see replset.py for the set and the group): the
primary cut off for longer than the election timeout while writers keep writing to it, then
healed with rollback. A w:1 writer (liboutbox refuses w below majority, so this one mimics
its update with pymongo) and two w:"majority" chaos-writers; `testRollbackLog` tells which
of the w:1 commits were rolled back."""

import os
import threading
import time

import chaoslib as cl
import pymongo
from bson.int64 import Int64
from chaoslib import Env, check, sizes
from replset import (ELECTION_MS, MEMBERS, ReplSet, TappedGroup, delivered_ids, event_doc,
                     published_by_two, wait_all_owned)


class W1Writer:
    """A writer with w:1 on a direct connection to one member, mimicking liboutbox's update
    (version guard, eventSeq, $push of the events): liboutbox itself refuses w < majority.
    Each entity has only this writer. Records every acknowledged commit; stops at the first
    error (the member stepped down)."""

    def __init__(self, uri, count=20):
        self.client = pymongo.MongoClient(uri, serverSelectionTimeoutMS=2000,
                                          socketTimeoutMS=5000, retryWrites=False)
        self.coll = self.client[cl.DB]["things"].with_options(
            write_concern=pymongo.WriteConcern(w=1))
        self.state = {}  # entity -> (version, eventSeq)
        self.acked = []  # (ack time, entity, [(seq, id)])
        self.count = count
        self.error = None
        self.stopping = False
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def commit(self, k):
        entity = "w1-%d" % k
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
        self.acked.append((time.time(), entity, [(seq + 1 + j, evs[j][0])
                                                 for j in range(len(evs))]))

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
            w1 = W1Writer(env.mongod.member_uri(p))
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
            mine = [(t, e, evs) for t, e, evs in w1.acked]
            late = [x for x in mine if x[0] > after]
            check(all(eid in rolled for _, _, evs in late for _, eid in evs),
                  "a w:1 commit acknowledged by the cut-off primary was not rolled back")
            check(not any(eid in rolled for t, _, evs in mine if t < before
                          for _, eid in evs),
                  "a w:1 commit acknowledged before the cut was rolled back")
            for t, entity, evs in mine:
                for seq, eid in evs:
                    if eid in rolled:
                        rolled_ids.add(eid)
                    else:
                        env.ledger.add_direct("things", entity, seq, eid)
            notes.append("round %d: member %d cut off %.1f s; w:1 commits acknowledged %d "
                         "(%d during the cut); rolled back: %s" %
                         (r, p, cut_seconds, len(mine), len(late),
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
