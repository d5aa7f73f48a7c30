# Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
"""Chaos for relay groups: three relays with one name share the partitions through leases
while writers commit; members are killed with kill -9 (and restarted) and paused with
SIGSTOP for longer than the lease time (then SIGCONT) at random moments. The usual checks
(every committed event delivered, first deliveries in order, nothing pending, nothing
phantom) plus the failover times: from each kill or pause until every partition the member
owned has another owner (read from the lease documents).

CI form: 3 kills and 2 pauses. Long form (`chaos.py --long group`): 20 kills and 20 pauses."""

import os
import signal
import time

import chaoslib as cl
from chaoslib import Env, check, sizes

# Short leases keep the scenario fast: a lost member's partitions move within ~3.5 s.
TTL_MS, RENEW_MS, MARGIN_MS = 3000, 500, 1000
LEASE_OPTS = ("--lease-ttl-ms", str(TTL_MS), "--lease-renew-ms", str(RENEW_MS),
              "--lease-margin-ms", str(MARGIN_MS))
MEMBERS = 3


def owners(env):
    """{partition: owner instance id or None} from the lease documents."""
    state = env.db["outbox_relay_state"]
    return {d["_id"]["partition"]: d.get("owner")
            for d in state.find({"_id.relay": "chaos", "_id.partition": {"$exists": True}})}


def owned_by(env, relay):
    mark = "/%d/" % relay.pid
    return {p for p, o in owners(env).items() if o and mark in o}


def wait_taken(env, parts, gone_pid, timeout=30):
    """Seconds until none of `parts` is owned by `gone_pid` any more and each has an owner;
    None on timeout."""
    start = time.time()
    mark = "/%d/" % gone_pid
    while time.time() - start < timeout:
        now = owners(env)
        if all(now.get(p) and mark not in now[p] for p in parts):
            return time.time() - start
        time.sleep(0.05)
    return None


def percentile(values, q):
    s = sorted(values)
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))] if s else 0.0


def scenario_group(opts):
    """Three relays with one name (a group), writers committing; kill -9 (then restart) and
    SIGSTOP past the lease time (then SIGCONT) of random members: nothing lost, first
    deliveries in order; reports the failover times."""
    kills, pauses = sizes(opts, (3, 2), (20, 20))
    env = Env(opts, "group")
    failovers = []
    try:
        relays = [env.relay(LEASE_OPTS) for _ in range(MEMBERS)]
        for r in relays:
            check(r.wait_log("member "), "a relay did not start")
        check(cl.wait_until(lambda: all(owners(env).values()) and len(owners(env)) == 32, 30),
              "the group did not take all partitions")
        # Writers commit for as long as the faults go on; they are stopped (kill -9: the
        # ledger knows which commits were in flight) once the faults are done.
        delay = 5000 if not opts.long else 2000
        env.writer("things", "a", 0, 200, 10 ** 7, 4, delay)
        env.writer("things", "b", 0, 200, 10 ** 7, 4, delay)
        actions = ["kill"] * kills + ["pause"] * pauses
        opts.rng.shuffle(actions)
        for action in actions:
            time.sleep(opts.rng.uniform(1.0, 3.0))
            i = opts.rng.randrange(MEMBERS)
            victim = relays[i]
            parts = owned_by(env, victim)
            if action == "kill":
                victim.kill9()
                env.figures.kills += 1
                took = wait_taken(env, parts, victim.pid)
                relays[i] = env.relay(LEASE_OPTS)
            else:
                cl.mark("relay pid %d SIGSTOP" % victim.pid)
                os.kill(victim.pid, signal.SIGSTOP)
                took = wait_taken(env, parts, victim.pid)
                time.sleep(0.5)
                os.kill(victim.pid, signal.SIGCONT)
                cl.mark("relay pid %d SIGCONT" % victim.pid)
                env.figures.pauses = getattr(env.figures, "pauses", 0) + 1
            check(took is not None, "%s of a member: its partitions %s were not taken over" %
                  (action, sorted(parts)))
            if parts:
                failovers.append(took)
        for w in env.writers:
            w.kill9()
        env.finish_writers()
        env.figures.notes = ["%d kills, %d pauses; partitions taken over after (s): p50 %.2f "
                             "max %.2f over %d faults" %
                             (kills, pauses, percentile(failovers, 0.5),
                              percentile(failovers, 1.0), len(failovers))]
        cl.expect_clean(env)
        check(cl.wait_until(lambda: sorted(len(owned_by(env, r)) for r in relays)[-1] -
                            sorted(len(owned_by(env, r)) for r in relays)[0] <= 1, 30),
              "the group did not settle: %s" % [len(owned_by(env, r)) for r in relays])
    finally:
        env.close()


SCENARIOS = [scenario_group]
CI_SCENARIOS = ["group"]
