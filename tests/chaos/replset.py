# Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
"""Chaos on a three-member replica set (test-mongod --members 3 --enable-test-commands):
elections under load (`stepdown`), members whose clocks disagree (`clock_skew`), lagging
secondaries read by the relay and outbox-admin (`lagging_secondary`), and the failover
benchmark (`failover_bench`: failover to first publish after it, duplicates per failover);
the set and the tapped group are also used by isolation.py (`isolated_primary`).

Relays form a group of three; each one's broker connection goes through a tapping proxy
(tests/fixtures/tcpproxy.py) so the PUBLISH packets of each member are known. Writers and
relays are given every member as a seed (`replicaSet=rs0`) and follow the primary; the
harness drives faults through direct connections to the members (`testMemberFault`,
`replSetStepDown`, `testRollbackLog`). The verifier is chaoslib's."""

import datetime
import json
import os
import subprocess
import sys
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "fixtures"))
sys.path.insert(0, os.path.join(HERE, "..", "relay", "e2e"))
import chaoslib as cl  # noqa: E402
import pymongo  # noqa: E402
from bson.int64 import Int64  # noqa: E402
from chaoslib import Env, check, close_all, sizes  # noqa: E402
from groups import LEASE_OPTS, percentile  # noqa: E402
from grouptest import partition_of  # noqa: E402
from tcpproxy import Proxy  # noqa: E402

MEMBERS = 3
ELECTION_MS = 1000


# ---------------------------------------------------------------------------------------------
# The replica set, seen through direct connections to each member


class ReplSet:
    def __init__(self, env):
        self.env = env
        self.mongod = env.mongod
        self.direct = [pymongo.MongoClient(self.mongod.member_uri(i), serverSelectionTimeoutMS=300,
                                           socketTimeoutMS=15000)
                       for i in range(MEMBERS)]

    def hello(self, i):
        try:
            return self.direct[i].admin.command("hello")
        except pymongo.errors.PyMongoError:
            return {}

    def primary(self, timeout=20):
        """The index of the member that is primary of the newest term (a cut-off former
        primary may still call itself primary with an older electionId)."""
        best = None
        deadline = time.time() + timeout
        while best is None and time.time() < deadline:
            for i in range(MEMBERS):
                h = self.hello(i)
                if h.get("isWritablePrimary") and (best is None or
                                                  h["electionId"] > best[1]):
                    best = (i, h["electionId"])
            if best is None:
                time.sleep(0.05)
        check(best is not None, "the set has no primary")
        return best[0]

    def admin(self, cmd, value, on, **kw):
        return self.direct[on].admin.command(cmd, value, **kw)

    def fault(self, i, mode, via=None, **kw):
        """testMemberFault on member i, sent to another member (a cut-off one may not
        answer)."""
        via = via if via is not None else (i + 1) % MEMBERS
        cl.mark("member %d %s %s" % (i, mode, kw))
        return self.admin("testMemberFault", self.mongod.hosts()[i], via, mode=mode, **kw)

    def stepdown(self, secs=3):
        """Steps the primary down (6.0's election handoff elects the next one at once)."""
        p = self.primary()
        cl.mark("stepdown of member %d" % p)
        try:
            self.admin("replSetStepDown", secs, p, secondaryCatchUpPeriodSecs=1)
        except pymongo.errors.PyMongoError as exc:  # 262 under load: nobody caught up
            cl.mark("stepdown: %s" % exc)
            return False
        return True

    def rollback_log(self):
        return self.admin("testRollbackLog", 1, self.primary())

    def close(self):
        for c in self.direct:
            c.close()


# ---------------------------------------------------------------------------------------------
# A group of relays, each behind a PUBLISH tap


class TappedGroup:
    def __init__(self, env, lease_opts=LEASE_OPTS, n=3, mongo_uri=None, extra=()):
        self.env, self.lease_opts, self.mongo_uri, self.extra = env, lease_opts, mongo_uri, extra
        self.members = []  # (relay, proxy)
        for _ in range(n):
            proxy = Proxy("127.0.0.1", env.broker.port, mqtt=True)
            relay = env.relay(tuple(lease_opts) + tuple(extra),
                              mqtt_uri="tcp://127.0.0.1:%d" % proxy.port, mongo_uri=mongo_uri)
            self.members.append((relay, proxy))
        for relay, _ in self.members:
            check(relay.wait_log("member ", 30), "a relay did not start")

    def publishes(self):
        """[(time, member index, topic, payload)] of every PUBLISH, in time order."""
        out = []
        for i, (_, proxy) in enumerate(self.members):
            out += [(p.time, i, p.topic, p.payload) for p in proxy.publishes_since(0)]
        return sorted(out, key=lambda x: x[0])

    def close(self):
        for _, proxy in self.members:
            proxy.close()


def wait_all_owned(env, timeout=30):
    state = env.db["outbox_relay_state"]

    def owned():
        docs = list(state.find({"_id.relay": "chaos", "_id.partition": {"$exists": True}}))
        return len(docs) == 32 and all(d.get("owner") for d in docs)
    check(cl.wait_until(owned, timeout, 0.2), "the group did not take all partitions")


def event_doc(seq, kind="chaos.event", data=None):
    eid = str(uuid.uuid4())
    return eid, {"id": eid, "seq": Int64(seq), "type": kind,
                 "time": datetime.datetime.utcnow(), "data": data or {}, "headers": {}}


def marker(env, client, n):
    """Commits one event to a new entity with w: "majority" through `client` (a direct
    connection to the new primary: a driver's own discovery would be timed too), retrying
    until it takes it; returns (id, ack time)."""
    entity = "mark-%d" % n
    eid, ev = event_doc(1, "chaos.marker")
    coll = client[cl.DB]["things"].with_options(
        write_concern=pymongo.WriteConcern(w="majority"))
    for _ in range(200):
        try:
            coll.insert_one({"_id": entity, "version": Int64(1), "eventSeq": Int64(1),
                             "events": [ev]})
            break
        except pymongo.errors.DuplicateKeyError:
            break  # an earlier attempt went through
        except pymongo.errors.PyMongoError:
            time.sleep(0.05)
    acked = time.time()
    env.ledger.add_direct("things", entity, 1, eid)
    return eid, acked


def first_publish_of(group, eid, timeout=30):
    """The time of the first PUBLISH (any member) whose payload carries event id eid."""
    needle = eid.encode()
    found = [None]

    def seen():
        for t, _, _, payload in group.publishes():
            if needle in payload:
                found[0] = t
                return True
        return False
    cl.wait_until(seen, timeout, 0.02)
    return found[0]


# ---------------------------------------------------------------------------------------------
# stepdown and the failover benchmark


def fail_over(rs, kind):
    """One election: "stepdown" (replSetStepDown: the old primary's connections stay) or
    "refuse" (the primary gone as if crashed: its connections reset, the others elect one
    after the election timeout; healed later by the caller). Returns the old primary, or
    None if the set refused the stepdown."""
    before = rs.primary()
    if kind == "stepdown":
        if not rs.stepdown():
            return None
    else:
        rs.fault(before, "refuse")
    check(rs.primary() != before, "member %d was still primary after its %s" % (before, kind))
    return before


def stepdowns_under_load(opts, tag, stepdowns, spacing, kinds=("stepdown",)):
    """Three relays in a group and two writers; `stepdowns` elections `spacing` seconds
    apart (their kinds taken in turn from `kinds`); after each one a marker event is
    committed and its first PUBLISH timed. Prints the figures; fails on the verifier's."""
    env = Env(opts, tag, members=MEMBERS, election_timeout_ms=ELECTION_MS)
    rs = group = None
    try:
        rs = ReplSet(env)
        group = TappedGroup(env)
        wait_all_owned(env)
        env.writer("things", "a", 0, 200, 10 ** 7, 3, 5000)
        env.writer("things", "b", 0, 200, 10 ** 7, 3, 5000)
        times = {k: ([], [], []) for k in kinds}  # to publish, to commit, commit to publish
        for n in range(stepdowns):
            time.sleep(spacing)
            kind = kinds[n % len(kinds)]
            start = time.time()
            old = fail_over(rs, kind)
            if old is None:
                continue
            eid, acked = marker(env, rs.direct[rs.primary()], n)
            published = first_publish_of(group, eid)
            check(published is not None, "the marker after %s %d was never published" %
                  (kind, n))
            for series, value in zip(times[kind], (published - start, acked - start,
                                                   published - acked)):
                series.append(value)
            if kind == "refuse":
                rs.fault(old, "heal")
        for w in env.writers:
            w.kill9()
        env.finish_writers()
        done = sum(len(t[0]) for t in times.values())
        check(done >= max(1, stepdowns // 2), "only %d of %d failovers happened" %
              (done, stepdowns))
        ok, problems = env.quiet_and_verify()
        duplicates = len(env.sub.snapshot()) - len(set(delivered_ids(env)))
        for kind, (to_publish, to_commit, commit_to_publish) in times.items():
            print("  %d %s: to first publish of a new commit p50 %.2f s max %.2f s (to commit "
                  "acknowledged p50 %.2f max %.2f; commit to publish p50 %.2f max %.2f)" %
                  (len(to_publish), kind, percentile(to_publish, 0.5),
                   percentile(to_publish, 1.0), percentile(to_commit, 0.5),
                   percentile(to_commit, 1.0), percentile(commit_to_publish, 0.5),
                   percentile(commit_to_publish, 1.0)), flush=True)
        print("  duplicates %d over %d failovers (%.1f per failover)" %
              (duplicates, done, duplicates / max(done, 1)), flush=True)
        check(ok, "; ".join(problems))
    finally:
        close_all(group, rs, env)


def delivered_ids(env):
    out = []
    for _, payload, _ in env.sub.snapshot():
        try:
            out.append(json.loads(payload.decode())["id"])
        except Exception:
            pass
    return out


def scenario_stepdown(opts):
    """Elections every few seconds (replSetStepDown of the primary, and every other time the
    primary gone as if crashed) under two writers and three relays in a group: nothing lost,
    first deliveries in order; duplicates and the failover-to-publish times reported."""
    stepdowns_under_load(opts, "stepdown", sizes(opts, 4, 30), sizes(opts, 2.5, 3.0),
                         ("stepdown", "refuse"))


def scenario_failover_bench(opts):
    """The failover benchmark (by hand, not in CI): 20 stepdowns and 20 primaries gone as if
    crashed, 4 s apart, under load; prints failover-to-first-publish p50/max per kind and
    the duplicates per failover."""
    stepdowns_under_load(opts, "fobench", sizes(opts, 40, 100), 4.0, ("stepdown", "refuse"))


# ---------------------------------------------------------------------------------------------
# clock_skew


def published_by_two(publishes, window):
    """Partitions published by two members at once: one event published by two members
    within `window` seconds (a lease time) of each other, while the first still publishes
    that partition (it sends something of it at or after the second's copy). A handoff moves
    a partition only after its owner's publishes were acknowledged and cleared, so the next
    owner never sends them again; a lease taken while its owner still publishes shows as
    both sending the pending events. An owner that stopped at its deadline, whose last clear
    no majority acknowledged, leaves the event pending for the next owner: a duplicate, not
    two owners, and it publishes nothing of the partition after that.
    Returns {partition: (member, member, event id, time)}."""
    first = {}  # event id -> (member, time)
    last = {}  # (partition, member) -> time of its last publish there
    dup = []
    for t, member, topic, payload in publishes:
        p = partition_of(topic.split("/", 2)[2])
        last[(p, member)] = max(last.get((p, member), t), t)
        try:
            eid = json.loads(payload.decode("utf-8"))["id"]
        except Exception:
            continue
        seen = first.setdefault(eid, (member, t))
        if seen[0] != member and t - seen[1] < window:
            dup.append((p, (seen[0], member, eid, round(t, 3)), t))
    out = {}
    for p, found, t in dup:
        if last.get((p, found[0]), 0) >= t:
            out.setdefault(p, found)
    return out


def skewed_failovers(opts, tag, lease, failovers):
    """Members' clocks +2 s, -2 s and 0; the primary moved between them `failovers` times
    (replSetStepUp of the next one: the lease clock jumps 2-4 s forward or back each time)
    under writers and a group of three. Returns the partitions published by two members
    at once (published_by_two)."""
    ttl, renew, margin = lease
    env = Env(opts, tag, members=MEMBERS, election_timeout_ms=ELECTION_MS)
    rs = group = None
    try:
        rs = ReplSet(env)
        for i, ms in enumerate((2000, -2000, 0)):
            rs.fault(i, "clock", ms=ms)
        group = TappedGroup(env, ("--lease-ttl-ms", str(ttl), "--lease-renew-ms", str(renew),
                                  "--lease-margin-ms", str(margin)))
        wait_all_owned(env)
        env.writer("things", "a", 0, 200, 10 ** 7, 3, 8000)
        env.writer("things", "b", 0, 200, 10 ** 7, 3, 8000)
        order = [1, 0, 2, 0, 1, 2]
        moved = 0
        for n in range(failovers):
            time.sleep(2.0)
            target = order[n % len(order)]
            if rs.primary() == target:
                target = (target + 1) % MEMBERS
            cl.mark("stepUp of member %d" % target)
            try:
                rs.admin("replSetStepUp", 1, target)
                moved += 1
            except pymongo.errors.PyMongoError as exc:
                cl.mark("stepUp: %s" % exc)
        time.sleep(2.0)
        for w in env.writers:
            w.kill9()
        env.finish_writers()
        check(moved >= max(1, failovers // 2), "only %d of %d failovers happened" %
              (moved, failovers))
        ok, problems = env.quiet_and_verify()
        both = published_by_two(group.publishes(), ttl / 1000.0)
        print("  lease %d/%d/%d ms (ttl/renew/margin), clock skew up to 4000 ms, %d failovers: "
              "partitions published by two members at once: %d %s" %
              (ttl, renew, margin, moved, len(both), sorted(both.items())[:4]), flush=True)
        check(ok, "; ".join(problems))
        return both
    finally:
        close_all(group, rs, env)


def scenario_clock_skew(opts):
    """Member clocks +2 s / -2 s / 0 and failovers between them: with a lease margin above
    the 4 s skew no partition is published by two members at once; with a margin below it,
    duplicates only (nothing lost, first deliveries in order)."""
    n = sizes(opts, 4, 20)
    both = skewed_failovers(opts, "skew-below", (10000, 2000, 5000), n)
    check(not both, "skew below the margin: partitions published by two members at once: %s"
          % sorted(both))
    skewed_failovers(opts, "skew-above", (3000, 500, 1000), n)


# ---------------------------------------------------------------------------------------------
# lagging_secondary


def outbox_admin(opts):
    path = os.path.join(os.path.dirname(os.path.abspath(opts.relay)), "outbox-admin")
    return path if os.path.exists(path) else None


def scenario_lagging_secondary(opts):
    """Secondaries 1.5 s and 0.2 s behind; the relay (killed and restarted once, so it
    sweeps) and outbox-admin read with readPreference=secondary: nothing skipped,
    dead-lettered or re-ordered."""
    env = Env(opts, "lagging", members=MEMBERS, election_timeout_ms=ELECTION_MS)
    rs = None
    try:
        rs = ReplSet(env)
        rs.fault(1, "lag", ms=1500)
        rs.fault(2, "lag", ms=200)
        uri = env.mongod.uri + "&readPreference=secondary"
        relay = env.relay(mongo_uri=uri)
        check(relay.wait_log("change stream open", 30), "relay did not start")
        seconds = sizes(opts, 8, 60)
        for prefix in "lmno":  # each waits ~0.2 s per commit for the majority
            env.writer("things", prefix, 0, 30, 10 ** 7, 3, 20000)
        time.sleep(seconds / 2)
        relay.kill9()
        env.figures.kills += 1
        relay = env.relay(mongo_uri=uri)
        admin, status = outbox_admin(opts), None
        if admin:
            status = subprocess.run([admin, "--mongodb-uri", uri, "--database", cl.DB,
                                     "--collection", "things", "--name", "chaos", "status"],
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                    timeout=60)
            with open(os.path.join(env.workdir, "admin-status.txt"), "wb") as f:
                f.write(status.stdout)
        time.sleep(seconds / 2)
        for w in env.writers:
            w.kill9()
        env.finish_writers()
        dead = env.db["things"].count_documents({"deadLetters.0": {"$exists": True}})
        env.figures.notes = ["dead letters: %d; outbox-admin status (secondary reads): %s" %
                             (dead, "exit %d" % status.returncode if status else
                              "not built, skipped")]
        cl.expect_clean(env)
        check(dead == 0, "%d documents have dead letters" % dead)
        check(status is None or status.returncode == 0,
              "outbox-admin status failed: %s" % (status.stdout[-500:] if status else ""))
    finally:
        close_all(rs, env)


SCENARIOS = [scenario_stepdown, scenario_clock_skew, scenario_lagging_secondary,
             scenario_failover_bench]
CI_SCENARIOS = ["stepdown", "clock_skew", "isolated_primary", "lagging_secondary"]
LONG_SCENARIOS = ["stepdown", "clock_skew", "isolated_primary", "lagging_secondary"]
