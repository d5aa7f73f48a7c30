# Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
"""Long-form resource checks (run by hand with `chaos.py --long`):
  drain_memory  1,000,000 pending events written before the relay starts (no checkpoint: a
                sweep), the relay's VmRSS/VmHWM sampled while it drains, then the broker
                stopped for a minute while writers keep committing: the peak is reported and
                resident memory must stay flat (bounded by --max-buffered-events, not by the
                backlog).
  fd_reconnects file descriptors of the relay counted after each of many broker restarts and
                MongoDB connection drops: they must not grow.
Sizes can be lowered for a quick try: CHAOS_DRAIN_EVENTS=100000 CHAOS_OUTAGE_SECONDS=10."""

import datetime
import os
import threading
import time
import uuid

from bson.int64 import Int64

import chaoslib as cl
from chaoslib import Env, check

DRAIN_EVENTS = int(os.environ.get("CHAOS_DRAIN_EVENTS", "1000000"))
OUTAGE_SECONDS = int(os.environ.get("CHAOS_OUTAGE_SECONDS", "60"))
EVENTS_PER_DOC = 100


class Sampler:
    """Samples a relay's VmRSS and VmHWM (kB) every `step` seconds in a thread."""

    def __init__(self, relay, step=0.5):
        self.relay, self.step = relay, step
        self.samples = []  # (time, rss, hwm)
        self.stop_flag = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self.stop_flag.is_set():
            rss, hwm = self.relay.proc_status("VmRSS"), self.relay.proc_status("VmHWM")
            if rss is not None:
                self.samples.append((time.time(), rss, hwm))
            time.sleep(self.step)

    def stop(self):
        self.stop_flag.set()
        self.thread.join()

    def between(self, t0, t1):
        return [s for s in self.samples if t0 <= s[0] <= t1]


def write_backlog(env, n_events):
    """Writes `n_events` pending events (EVENTS_PER_DOC per entity) directly, in the stored
    contract's shape, recording them in the ledger."""
    coll = env.db["things"]
    now = datetime.datetime.utcnow().replace(microsecond=0)
    docs = []
    n_docs = n_events // EVENTS_PER_DOC
    for d in range(n_docs):
        eid = "bk%d" % d
        evs = []
        for s in range(1, EVENTS_PER_DOC + 1):
            i = str(uuid.uuid4())
            evs.append({"id": i, "seq": Int64(s), "type": "chaos.backlog", "time": now,
                        "data": {"n": s}})
            env.ledger.add_direct("things", eid, s, i)
        docs.append({"_id": eid, "version": Int64(1), "eventSeq": Int64(EVENTS_PER_DOC),
                     "events": evs})
        if len(docs) == 200:
            coll.insert_many(docs, ordered=False)
            docs = []
    if docs:
        coll.insert_many(docs, ordered=False)


def scenario_drain_memory(opts):
    """Relay memory while draining a 1M-event backlog and during a one-minute broker outage."""
    env = Env(opts, "drain")
    try:
        t = time.time()
        write_backlog(env, DRAIN_EVENTS)
        print("  backlog of %d events written in %.0fs" % (DRAIN_EVENTS, time.time() - t),
              flush=True)
        relay = env.relay()
        sampler = Sampler(relay)
        t_start = time.time()
        check(cl.wait_until(lambda: not env.db.things.find_one({"events.0": {"$exists": True}}),
                            3600, 2.0), "the backlog was not drained within an hour")
        t_drained = time.time()
        env.sub.wait_silence(2.0, 600)
        drain = sampler.between(t_start, t_drained)
        print("  drained %d events in %.0fs (%.0f/s); relay RSS peak %d kB, VmHWM %d kB" %
              (DRAIN_EVENTS, t_drained - t_start, DRAIN_EVENTS / max(t_drained - t_start, 1),
               max(s[1] for s in drain), max(s[2] for s in drain)), flush=True)
        # The broker is down for a while; writers keep committing (backpressure must hold).
        env.writer("things", "o", 0, 500, 40000, 4, 200)
        time.sleep(2)
        env.broker.stop()
        cl.mark("broker stop (outage)")
        env.figures.broker_restarts += 1
        t_down = time.time()
        time.sleep(OUTAGE_SECONDS)
        outage = sampler.between(t_down, time.time())
        env.broker.start()
        cl.mark("broker started (outage over)")
        env.finish_writers(600)
        ok, problems = env.quiet_and_verify(600)
        sampler.stop()
        q = max(1, len(outage) // 4)
        first, last = outage[:q], outage[-q:]
        rss_first = sum(s[1] for s in first) / len(first)
        rss_last = sum(s[1] for s in last) / len(last)
        peak = max(s[2] for s in sampler.samples)
        print("  broker outage %ds: RSS %.0f kB in its first quarter, %.0f kB in its last; "
              "VmHWM over the run %d kB" % (OUTAGE_SECONDS, rss_first, rss_last, peak))
        print("chaos: drain events=%d peak_rss_kb=%d outage_rss_growth_kb=%.0f" %
              (DRAIN_EVENTS, peak, rss_last - rss_first), flush=True)
        check(ok, "; ".join(problems))
        check(rss_last - rss_first < 0.10 * rss_first + 20000,
              "RSS grew from %.0f to %.0f kB during the broker outage" % (rss_first, rss_last))
        check(peak < 512 * 1024, "relay peak RSS %d kB (above 512 MiB) for a %d-event backlog" %
              (peak, DRAIN_EVENTS))
    finally:
        env.close()


def scenario_fd_reconnects(opts):
    """File descriptors of the relay across 10 broker restarts and 10 MongoDB drops."""
    env = Env(opts, "fds")
    try:
        relay = env.relay()
        check(relay.wait_log("change stream open"), "relay did not start")
        env.writer("things", "f", 0, 100, 20000, 4, 1500)
        time.sleep(2)
        counts = [relay.fd_count()]
        for i in range(10):
            env.broker.restart(0.5)
            env.figures.broker_restarts += 1
            time.sleep(2)
            env.mongod.failpoint({"times": 2}, {"failCommands": ["getMore", "update"],
                                                "closeConnection": True,
                                                "appName": "outbox-relay-stream"})
            env.figures.failpoints += 1
            time.sleep(2)
            counts.append(relay.fd_count())
        env.mongod.failpoint_off()
        env.finish_writers(600)
        ok, problems = env.quiet_and_verify(300)
        counts.append(relay.fd_count())
        print("  relay fds after each reconnect round: %s" % counts)
        check(ok, "; ".join(problems))
        check(max(counts[3:]) <= counts[1] + 4, "fd count grew across reconnects: %s" % counts)
    finally:
        env.close()


SCENARIOS = [("drain_memory", scenario_drain_memory), ("fd_reconnects", scenario_fd_reconnects)]
NAMES = [n for n, _ in SCENARIOS]
