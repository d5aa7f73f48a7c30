#!/usr/bin/env python3
# Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
"""Two measurements through mongos (test-mongod --mongos --shards 2), by hand, not in CI
(issue 26): its servers, relay and subscriber are chaoslib's.

  drain    N pending events (written with pymongo before the relay starts) on a collection
           sharded by hashed _id, drained by one relay through mongos, against the same drain
           on a three-member replica set; prints both rates and their ratio.
  latency  one event committed at a time, with pauses, to a collection sharded by hashed
           _id: commit -> PUBLISH latency for each --periodic-noop-ms given (an idle shard
           holds the merged change stream back until its periodic no-op).

usage: mongos_bench.py --relay PATH --mongod PATH --writer PATH drain [--events N]
       mongos_bench.py --relay PATH --mongod PATH --writer PATH latency [--noop-ms 200,1000]
(run with /usr/bin/python3: pymongo and paho-mqtt from Debian)"""

import argparse
import datetime
import json
import os
import random
import sys
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "chaos"))
import chaoslib as cl  # noqa: E402
from bson.int64 import Int64  # noqa: E402

DB = cl.DB


def world(opts, tag, shards=0, members=1, noop_ms=200):
    env = cl.Env(opts, tag, members=members, shards=shards)
    if shards and noop_ms != env.mongod.noop_ms:  # restart with the wanted interval
        env.mongod.close()
        env.mongod = cl.Mongod(opts.mongod, env.workdir, shards=shards, noop_ms=noop_ms)
        env.db = env.mongod.client[DB]
    if shards:
        env.mongod.client.admin.command("enableSharding", DB)
        env.mongod.client.admin.command("shardCollection", DB + ".things",
                                        key={"_id": "hashed"})
    return env


def event(seq):
    return {"id": str(uuid.uuid4()), "seq": Int64(seq), "type": "bench.event",
            "time": datetime.datetime.utcnow(), "data": {"n": seq}}


def drain_rate(opts, tag, shards, members):
    env = world(opts, tag, shards=shards, members=members)
    try:
        per_entity = 10
        docs = [{"_id": "e%d" % i, "tenant": "t", "version": Int64(1),
                 "eventSeq": Int64(per_entity), "events": [event(s + 1) for s in range(per_entity)]}
                for i in range(opts.events // per_entity)]
        coll = env.db["things"]
        for k in range(0, len(docs), 500):
            coll.insert_many(docs[k:k + 500])
        total = len(docs) * per_entity
        start = time.time()
        env.relay()
        cl.check(cl.wait_until(lambda: env.sub.count() >= total, 600, 0.05),
                 "%s: only %d of %d published" % (tag, env.sub.count(), total))
        published = time.time() - start
        cl.check(cl.wait_until(lambda: not cl.pending_events(env.db, ["things"]), 120, 0.1),
                 "%s: not cleared" % tag)
        cleared = time.time() - start
        return total, published, cleared
    finally:
        env.close()


def drain(opts):
    rs = drain_rate(opts, "bench-rs", 0, 3)
    ms = drain_rate(opts, "bench-mongos", 2, 1)
    for name, (n, pub, clr) in (("replica set (3 members)", rs), ("mongos (2 shards)", ms)):
        print("drain %-24s %d events: all published in %.2f s (%.0f events/s), all cleared "
              "in %.2f s" % (name, n, pub, n / pub, clr))
    print("drain ratio mongos / replica set: %.2f (events/s)" % ((ms[0] / ms[1]) / (rs[0] / rs[1])))


def latency_for(opts, noop_ms):
    env = world(opts, "lat-%d" % noop_ms, shards=2, noop_ms=noop_ms)
    try:
        r = env.relay()
        cl.check(r.wait_log("change stream open", 30), "no stream")
        coll = env.db["things"]
        times = []
        for i in range(opts.samples):
            time.sleep(random.uniform(0.2, 0.6) * noop_ms / 1000.0 + 0.1)
            ev = event(1)
            start = time.time()
            coll.insert_one({"_id": "l%d" % i, "version": Int64(1), "eventSeq": Int64(1),
                             "events": [ev]})
            cl.check(cl.wait_until(lambda: any(json.loads(p)["id"] == ev["id"]
                                               for _, p, _ in env.sub.snapshot()),
                                   noop_ms / 1000.0 * 3 + 10, 0.005), "event not published")
            times.append(time.time() - start)
        times.sort()
        print("latency periodic-noop-ms %5d: commit -> PUBLISH over %d commits: p50 %.3f s, "
              "p90 %.3f s, max %.3f s" % (noop_ms, len(times), times[len(times) // 2],
                                          times[int(len(times) * 0.9)], times[-1]))
    finally:
        env.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--relay", required=True)
    ap.add_argument("--mongod", required=True)
    ap.add_argument("--writer", required=True)
    ap.add_argument("--events", type=int, default=20000)
    ap.add_argument("--noop-ms", default="200,1000,3000")
    ap.add_argument("--samples", type=int, default=12)
    ap.add_argument("what", choices=["drain", "latency"])
    opts = ap.parse_args()
    opts.rng, opts.keep, opts.relay_log_level = random.Random(1), False, "info"
    if opts.what == "drain":
        drain(opts)
    else:
        for n in opts.noop_ms.split(","):
            latency_for(opts, int(n))
    return 0


if __name__ == "__main__":
    sys.exit(main())
