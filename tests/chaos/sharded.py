# Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
"""Chaos through mongos (test-mongod --mongos --shards 2, each idle shard ticking every
200 ms): the watched collection sharded by {tenant: 1, _id: 1} (split at tenant "m", the
upper chunk on shard1; the long form also by hashed _id), two liboutbox writers whose
entities carry a tenant (CHAOS_WRITER_TENANTS=1), three relays in a group, each behind a
PUBLISH tap, and kill -9 (then restart) and SIGSTOP past the lease time (then SIGCONT) of
random members. The verifier is chaoslib's: lost 0, first deliveries in order, nothing
pending or phantom; the PUBLISH packets per member are reported.

CI form (`mongos`, ~40 s): compound key, 2 kills and 1 pause. Long form (`chaos.py --long
mongos`): both shardings, 10 kills and 10 pauses each."""

import os
import signal
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "fixtures"))
import chaoslib as cl  # noqa: E402
from bson.min_key import MinKey  # noqa: E402
from chaoslib import DB, Env, check, sizes  # noqa: E402
from groups import LEASE_OPTS, owned_by, wait_taken  # noqa: E402
from tcpproxy import Proxy  # noqa: E402

MEMBERS = 3


def shard_things(env, key):
    admin = env.mongod.client.admin
    ns = DB + ".things"
    admin.command("enableSharding", DB, primaryShard="shard0")
    if key == "hashed":
        admin.command("shardCollection", ns, key={"_id": "hashed"})
    else:
        admin.command("shardCollection", ns, key={"tenant": 1, "_id": 1})
        admin.command("split", ns, middle={"tenant": "m", "_id": MinKey()})
        admin.command("moveChunk", ns, find={"tenant": "x"}, to="shard1")
    cl.mark("%s sharded by %s" % (ns, key))


class TappedMembers:
    """Three relay slots, each with its own PUBLISH tap that outlives the relay in it."""

    def __init__(self, env):
        self.env = env
        self.proxies = [Proxy("127.0.0.1", env.broker.port, mqtt=True) for _ in range(MEMBERS)]
        self.relays = [self.start(i) for i in range(MEMBERS)]

    def start(self, i):
        return self.env.relay(LEASE_OPTS, mqtt_uri="tcp://127.0.0.1:%d" % self.proxies[i].port)

    def publishes(self):
        return [len(p.publishes_since(0)) for p in self.proxies]

    def close(self):
        for p in self.proxies:
            p.close()


def faults(env, members, kills, pauses):
    actions = ["kill"] * kills + ["pause"] * pauses
    env.opts.rng.shuffle(actions)
    for action in actions:
        time.sleep(env.opts.rng.uniform(1.0, 2.5))
        i = env.opts.rng.randrange(MEMBERS)
        victim = members.relays[i]
        parts = owned_by(env, victim)
        if action == "kill":
            victim.kill9()
            env.figures.kills += 1
            took = wait_taken(env, parts, victim.pid)
            members.relays[i] = members.start(i)
        else:
            cl.mark("relay pid %d SIGSTOP" % victim.pid)
            os.kill(victim.pid, signal.SIGSTOP)
            took = wait_taken(env, parts, victim.pid)
            time.sleep(0.5)
            os.kill(victim.pid, signal.SIGCONT)
            cl.mark("relay pid %d SIGCONT" % victim.pid)
        check(took is not None, "%s of a member: partitions %s not taken over" %
              (action, sorted(parts)))


def through_mongos(opts, key, kills, pauses):
    env = Env(opts, "mongos-" + key, shards=2)
    members = None
    saved = os.environ.get("CHAOS_WRITER_TENANTS")
    os.environ["CHAOS_WRITER_TENANTS"] = "1"
    try:
        shard_things(env, key)
        members = TappedMembers(env)
        for r in members.relays:
            check(r.wait_log("member ", 30), "a relay did not start")
        check(cl.wait_until(lambda: len([r for r in members.relays if owned_by(env, r)]) ==
                            MEMBERS, 40), "the group did not share the partitions")
        delay = 5000 if not opts.long else 2000
        env.writer("things", "a", 0, 200, 10 ** 7, 4, delay)
        env.writer("things", "b", 0, 200, 10 ** 7, 4, delay)
        faults(env, members, kills, pauses)
        for w in env.writers:
            w.kill9()
        env.finish_writers()
        tenants = env.db["things"].distinct("tenant")
        check(len(tenants) > 13, "entities not spread over both shards: tenants %s" % tenants)
        env.figures.notes = ["%s key: %d kills, %d pauses; PUBLISH packets per member slot %s"
                             % (key, kills, pauses, members.publishes())]
        cl.expect_clean(env)
    finally:
        if saved is None:
            os.environ.pop("CHAOS_WRITER_TENANTS", None)
        else:
            os.environ["CHAOS_WRITER_TENANTS"] = saved
        if members:
            members.close()
        env.close()


def scenario_mongos(opts):
    """Writers, three relays in a group, kills and pauses, through mongos on a collection
    sharded by {tenant: 1, _id: 1} (and by hashed _id in the long form): nothing lost, first
    deliveries in order."""
    kills, pauses = sizes(opts, (2, 1), (10, 10))
    through_mongos(opts, "compound", kills, pauses)
    if opts.long:
        through_mongos(opts, "hashed", kills, pauses)


SCENARIOS = [scenario_mongos]
CI_SCENARIOS = ["mongos"]
LONG_SCENARIOS = ["mongos"]
