#!/usr/bin/env python3
# Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
"""The namespaces case of outbox-bench (issue 37): the same backlog of pending events spread
over 1 collection, 100 collections of one database and 200 databases x 5 collections
(1,000 namespaces), each drained by one relay started with --namespace patterns. Per layout:
events/s (from starting the relay until every event arrived and was cleared), the relay's
CPU per event and peak RSS (VmHWM), how many change streams it opened (one expected), and,
in the 1,000-namespace layout, the time from creating a new tenant's database to its first
event published (mid-drain, behind the backlog, and idle after it). The collections have the
outbox_pending index, as liboutbox's outbox_collection_ensure_indexes() makes it at an
application's start (--no-index: the relay's sweep creates it on each). Servers, relay and subscriber are chaoslib's (test-mongod and
mosquitto on free loopback ports). Prints one line per layout and the ratios the issue's
targets name; exits 1 when an event is missing or the relay opened more than one stream,
never because of a speed.

usage: namespaces_bench.py --relay PATH --mongod PATH [--events N] [--layouts 1x1,1x100,200x5]
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

PER_ENTITY = 10  # events per document: a few entities per namespace in the 1,000 case


def event(seq):
    return {"id": str(uuid.uuid4()), "seq": Int64(seq), "type": "bench.event",
            "time": datetime.datetime.utcnow(), "data": {"n": seq, "pad": "x" * 150}}


def layout_names(n_db, n_coll, run):
    if n_db == 1:
        db = "nsb_%s" % run
        pattern = "%s.c*" % db if n_coll > 1 else "%s.c0" % db
        return [(db, "c%d" % c) for c in range(n_coll)], pattern
    return ([("nsb_%s_t%d" % (run, d), "c%d" % c) for d in range(n_db) for c in range(n_coll)],
            "nsb_%s_t*.c*" % run)


def write_backlog(client, namespaces, events, with_index):
    per_ns = max(PER_ENTITY, events // len(namespaces))
    total = 0
    for db, coll in namespaces:
        if with_index:  # as liboutbox's outbox_collection_ensure_indexes() makes it
            client[db][coll].create_index(
                "eventSeq", name="outbox_pending",
                partialFilterExpression={"events.0": {"$exists": True}})
        docs = [{"_id": "e%d" % i, "version": Int64(1), "eventSeq": Int64(PER_ENTITY),
                 "events": [event(s + 1) for s in range(PER_ENTITY)]}
                for i in range(per_ns // PER_ENTITY)]
        client[db][coll].insert_many(docs)
        total += len(docs) * PER_ENTITY
    return total


def proc_cpu_s(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def proc_hwm_mib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    return 0.0


def pending(client, namespaces):
    return sum(client[db][coll].count_documents({"events.0": {"$exists": True}})
               for db, coll in namespaces)


def new_tenant_latency(env, client, run, sub, name):
    """Creates a new tenant's database (while the relay drains, or idle after); seconds until
    its event is published."""
    ev = event(1)
    start = time.time()
    client["nsb_%s_%s" % (run, name)]["c0"].insert_one({"_id": "n", "version": Int64(1),
                                                       "eventSeq": Int64(1), "events": [ev]})
    cl.check(cl.wait_until(lambda: any(ev["id"].encode() in p for _, p, _ in sub.snapshot()),
                           120, 0.01), "the new tenant's event was not published")
    at = [t for _, p, t in sub.snapshot() if ev["id"].encode() in p][0]
    return at - start


def run_layout(opts, n_db, n_coll):
    run = "%d" % os.getpid()
    env = cl.Env(opts, "nsbench-%dx%d" % (n_db, n_coll))
    try:
        client = env.mongod.client
        namespaces, pattern = layout_names(n_db, n_coll, run)
        total = write_backlog(client, namespaces, opts.events, not opts.no_index)
        start = time.time()
        relay = cl.Relay(opts.relay, env.workdir, env.mongod.uri, env.broker.uri,
                         "nsb_state_%s" % run, [], "nsbench",
                         ["--namespace", pattern], "info")
        env.relays.append(relay)
        late = None
        if n_db > 1:
            cl.check(cl.wait_until(lambda: env.sub.count() >= total // 4, 300, 0.02),
                     "the drain did not start")
            late = new_tenant_latency(env, client, run, env.sub, "tnew")
            total += 1
        cl.check(cl.wait_until(lambda: env.sub.count() >= total, 600, 0.02),
                 "only %d of %d published" % (env.sub.count(), total))
        cl.check(cl.wait_until(lambda: pending(client, namespaces) == 0, 120, 0.1),
                 "not cleared")
        elapsed = time.time() - start
        cpu = proc_cpu_s(relay.pid)
        hwm = proc_hwm_mib(relay.pid)
        idle = None
        if n_db > 1:  # discovery alone, with no backlog in front of the new tenant's event
            idle = new_tenant_latency(env, client, run, env.sub, "tidle")
            total += 1
        streams = relay.log_text().count("change stream open")
        ids = [json.loads(p)["id"] for _, p, _ in env.sub.snapshot()]
        cl.check(len(set(ids)) == total, "%d distinct of %d" % (len(set(ids)), total))
        cl.check(streams == 1, "the relay opened %d change streams" % streams)
        relay.stop()
        return {"layout": "%dx%d" % (n_db, n_coll), "namespaces": len(namespaces),
                "events": total, "seconds": elapsed, "events_per_s": total / elapsed,
                "relay_cpu_us_per_event": cpu * 1e6 / total, "relay_peak_rss_mib": hwm,
                "streams": streams, "new_tenant_first_event_s": late,
                "new_tenant_idle_first_event_s": idle}
    finally:
        env.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--relay", required=True)
    ap.add_argument("--mongod", required=True)
    ap.add_argument("--events", type=int, default=20000)
    ap.add_argument("--layouts", default="1x1,1x100,200x5")
    ap.add_argument("--json")
    ap.add_argument("--no-index", action="store_true",
                    help="write the backlog without the outbox_pending index (the relay's "
                         "sweep then creates it on each namespace)")
    opts = ap.parse_args()
    opts.rng, opts.keep, opts.relay_log_level, opts.writer = random.Random(1), False, "info", None
    rows = []
    for spec in opts.layouts.split(","):
        n_db, n_coll = (int(x) for x in spec.split("x"))
        r = run_layout(opts, n_db, n_coll)
        rows.append(r)
        print("namespaces %-6s %5d ns: %6d events in %6.2f s = %7.0f ev/s, relay %5.1f us CPU/event,"
              " peak RSS %5.1f MiB, %d stream(s)%s" %
              (r["layout"], r["namespaces"], r["events"], r["seconds"], r["events_per_s"],
               r["relay_cpu_us_per_event"], r["relay_peak_rss_mib"], r["streams"],
               "" if r["new_tenant_first_event_s"] is None else
               ", new tenant's first event after %.3f s mid-drain, %.3f s idle" %
               (r["new_tenant_first_event_s"], r["new_tenant_idle_first_event_s"])),
              flush=True)
    if len(rows) > 1:
        base = rows[0]
        for r in rows[1:]:
            print("namespaces %s vs %s: %.2f x events/s, %.2f x CPU per event" %
                  (r["layout"], base["layout"], r["events_per_s"] / base["events_per_s"],
                   r["relay_cpu_us_per_event"] / base["relay_cpu_us_per_event"]))
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except AssertionError as e:
        print("namespaces bench: %s" % e, file=sys.stderr)
        sys.exit(1)
