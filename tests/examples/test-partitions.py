#!/usr/bin/python3
# Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
"""Consumers that scale out and keep order per entity (issue 27, part 3). outbox-relay
publishes with the topic template outbox/{collection}/{partition}/{id}; two instances of the
C contacts-consumer subscribe to disjoint halves of the partitions (--partitions 0-1 and
2-3) and share one directory database. Every event is applied once across them, in seq order
per entity, every entity's events at one instance only; an instance that restarts resumes its
half (its persistent session kept what was published meanwhile). The Python and Node
example consumers run as two instances on the same halves too (Node where it can be had). A
relay that joins the group with another partition count is refused: the topics would move.
The Python and Node consumers also join one MQTT 5 shared subscription ($share/GROUP/...) in
pairs: every event reaches one member of the pair once (order per entity is not promised).

usage: test-partitions.py --relay PATH --c-consumer PATH [--node-dir DIR]
OUTBOX_TEST_MONGODB_URI and OUTBOX_TEST_MQTT_URI must be set (tests/fixtures/with-servers)."""
import argparse
import collections
import os
import sys

import exampletest
import languages_node
from languages_proc import Process, wait_until

try:
    import pymongo
    from bson import ObjectId
except ImportError:
    print("examples-partitions: SKIP: needs pymongo and paho-mqtt (run with /usr/bin/python3)")
    sys.exit(77)

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples")
sys.path.insert(0, os.path.join(EXAMPLES, "python"))
import outbox_writer  # noqa: E402 (the example itself, used as a module)

MONGO = os.environ["OUTBOX_TEST_MONGODB_URI"]
MQTT = os.environ["OUTBOX_TEST_MQTT_URI"]
PID = os.getpid()
PREFIX = os.environ.get("OUTBOX_TEST_DB_PREFIX", "")  # the run's databases (--against)
DB, COLL = PREFIX + "parts_%d" % PID, "contacts_%d" % PID
CHECKS = exampletest.Checks("examples-partitions")
check = CHECKS.check
TOPIC = "outbox/{collection}/{partition}/{id}"
HALVES = {"A": "0-1", "B": "2-3"}


def consumer(args, half):
    proc = Process("parts-consumer-" + half, [
        args.c_consumer, "--mqtt-uri", MQTT, "--mongodb-uri", MONGO,
        "--database", PREFIX + "parts_directory_%d" % PID, "--client-id", "parts-%s-%d" % (half, PID),
        "--topic", "outbox/%s/{partition}/#" % COLL, "--partitions", HALVES[half]])
    check("consumer %s subscribes to its half" % half,
          proc.wait_for(lambda ls: any("subscribed to" in l for l in ls)), proc.lines()[-3:])
    return proc


def example_consumers(lang, argv, env=None):
    """Two instances of the Python or Node example consumer, one per half."""
    procs = {}
    for half, parts in HALVES.items():
        procs[half] = Process("parts-%s-%s" % (lang, half), argv + [
            MQTT, "outbox/%s/{partition}/#" % COLL, "parts-%s-%s-%d" % (lang, half, PID), parts],
            env=env)
        check("%s consumer %s subscribes" % (lang, half),
              procs[half].wait_for(lambda ls: "subscribed" in ls), procs[half].lines()[-3:])
    return procs


def shared_consumers(lang, argv, env=None):
    """Two instances of the Python or Node example consumer in one MQTT 5 shared subscription
    ($share/GROUP/filter, issue 38): the broker hands each message to one of them."""
    procs = {}
    for half in HALVES:
        procs[half] = Process("share-%s-%s" % (lang, half), argv + [
            MQTT, "$share/g-%s-%d/outbox/%s/#" % (lang, PID, COLL),
            "share-%s-%s-%d" % (lang, half, PID)], env=env)
        check("%s consumer %s joins the shared subscription" % (lang, half),
              procs[half].wait_for(lambda ls: "subscribed" in ls), procs[half].lines()[-3:])
    return procs


def check_shared(what, seen, expected_seqs):
    """A shared subscription splits messages, not entities: every event applied once across
    the members, both members busy; order per entity is not checked (mosquitto hands
    messages round-robin, so an entity's events go to both: relay/README.md)."""
    got = collections.Counter((c, s) for events in seen.values() for c, s, _ in events)
    want = {(c, s) for c, last in expected_seqs.items() for s in range(1, last + 1)}
    check(what + ": every event once across the members",
          set(got) == want and all(n == 1 for n in got.values()),
          (len(got), len(want), [k for k, n in got.items() if n > 1][:5]))
    check(what + ": both members got messages", all(seen[h] for h in HALVES),
          {h: len(e) for h, e in seen.items()})


def example_applied(lines):
    """(entity, seq, order) of the example consumers' applied lines."""
    return [(f[1], int(f[2]), f[5]) for f in (l.split() for l in lines)
            if len(f) == 7 and f[0] == "applied"]


def relay(args, partitions, name="parts"):
    return Process("parts-relay-%s-%d" % (name, partitions), [
        args.relay, "--mongodb-uri", MONGO, "--database", DB, "--collection", COLL,
        "--mqtt-uri", MQTT, "--name", "%s-%d" % (name, PID), "--partitions", str(partitions),
        "--topic", TOPIC, "--metrics-listen", "off"])


def applied(lines):
    """(contact, seq, order) of every applied line, in order."""
    out = []
    for l in lines:
        f = l.split()
        if l.startswith("consumer: applied "):
            out.append((f[3][len("contact="):], int(f[4][len("seq="):]), f[5]))
    return out


def write(coll, ids, versions):
    """One more event per contact (a create for new ones); returns how many were committed."""
    for k, cid in enumerate(ids):
        if cid not in versions:
            name = {"firstName": "Ada%d" % k, "lastName": "Lovelace"}
            outbox_writer.create(coll, cid, {"name": name}, [("ContactCreated", {
                "name": name, "email": "ada%d@example.org" % k, "company": None})])
            versions[cid] = 1
        else:
            email = "v%d.%d@example.org" % (versions[cid], k)
            versions[cid], _ = outbox_writer.update(coll, cid, versions[cid], {"email": email},
                                                    [("ContactEmailUpdated", {"email": email})])
    return len(ids)


def check_split(what, seen, expected_seqs):
    """seen: {half: [(contact, seq, order)]}; expected_seqs: {contact: last seq}."""
    where = collections.defaultdict(set)
    for half, events in seen.items():
        for cid, _, _ in events:
            where[cid].add(half)
    check(what + ": every entity at exactly one instance",
          all(len(where[c]) == 1 for c in expected_seqs), dict(where))
    check(what + ": both instances have entities", all(seen[h] for h in HALVES),
          {h: len(e) for h, e in seen.items()})
    for cid, last in expected_seqs.items():
        mine = [(s, o) for h in HALVES for c, s, o in seen[h] if c == cid]
        check("%s: %s applied once each, in seq order" % (what, cid),
              mine == [(s, "in-order") for s in range(1, last + 1)], mine)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--relay")
    parser.add_argument("--c-consumer")
    parser.add_argument("--node-dir")
    args = parser.parse_args()
    coll = pymongo.MongoClient(MONGO, w="majority")[DB][COLL]
    ids, versions = [str(ObjectId()) for _ in range(16)], {}
    procs = {h: consumer(args, h) for h in HALVES}
    examples = {"python": example_consumers("python", [
        "/usr/bin/python3", os.path.join(EXAMPLES, "python", "outbox_consumer.py")])}
    shared = {"python": shared_consumers("python", [
        "/usr/bin/python3", os.path.join(EXAMPLES, "python", "outbox_consumer.py")])}
    node_path, why = languages_node.prepare(args.node_dir, EXAMPLES)
    if node_path:
        examples["node"] = example_consumers("node", [
            "node", os.path.join(EXAMPLES, "node", "consumer.js")],
            env=dict(os.environ, NODE_PATH=node_path))
        shared["node"] = shared_consumers("node", [
            "node", os.path.join(EXAMPLES, "node", "consumer.js")],
            env=dict(os.environ, NODE_PATH=node_path))
    else:
        print("examples-partitions: the Node consumers are left out: %s" % why)
    rel = relay(args, 4)
    for _ in range(3):
        write(coll, ids, versions)
    total = 3 * len(ids)
    wait_until(lambda: sum(len(applied(p.lines())) for p in procs.values()) >= total, 60)
    check_split("first run", {h: applied(p.lines()) for h, p in procs.items()},
                {c: 3 for c in ids})
    # Instance A restarts while events of both halves are published.
    before_b = len(applied(procs["B"].lines()))
    check("consumer A stops with status 0", procs["A"].stop() == 0)
    first_a = applied(procs["A"].lines())
    for _ in range(2):
        write(coll, ids, versions)
    check("B goes on while A is down", wait_until(
        lambda: len(applied(procs["B"].lines())) > before_b, 30))
    procs["A"] = consumer(args, "A")
    wait_until(lambda: len(first_a) + len(applied(procs["A"].lines())) +
               len(applied(procs["B"].lines())) >= total + 2 * len(ids), 60)
    seen = {"A": first_a + applied(procs["A"].lines()), "B": applied(procs["B"].lines())}
    check_split("after A restarted", seen, {c: 5 for c in ids})
    for lang, pair in examples.items():
        wait_until(lambda: sum(len(example_applied(p.lines())) for p in pair.values()) >=
                   5 * len(ids), 30)
        check_split(lang, {h: example_applied(p.lines()) for h, p in pair.items()},
                    {c: 5 for c in ids})
    for lang, pair in shared.items():
        wait_until(lambda: sum(len(example_applied(p.lines())) for p in pair.values()) >=
                   5 * len(ids), 30)
        check_shared(lang + " shared subscription",
                     {h: example_applied(p.lines()) for h, p in pair.items()},
                     {c: 5 for c in ids})
    # Another partition count for the same group: refused, nothing published by it.
    other = relay(args, 8)
    status = other.wait(60)
    check("a relay with --partitions 8 in a group of 4 is refused",
          status != 0 and any("partitions" in l for l in other.lines()),
          (status, other.lines()[-3:]))
    check("relay stops with status 0", rel.stop() == 0, rel.lines()[-3:])
    for p in list(procs.values()) + [p for group in (examples, shared)
                                     for pair in group.values() for p in pair.values()]:
        p.stop()
    return CHECKS.summary()


if __name__ == "__main__":
    sys.exit(main())
