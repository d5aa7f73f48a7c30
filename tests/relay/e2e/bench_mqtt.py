#!/usr/bin/python3
# Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
"""Benchmarks of issue 38 (suite 'bench', not CI): figures printed, with the target each must
meet.

pacing   --max-publish-rate R (default 1000) over a backlog: arrivals counted by a subscriber
         for 30 s after the first second; the rate must be within 5% of R (per-second
         minimum and maximum printed too).

usage: bench_mqtt.py OUTBOX_RELAY [pacing] [--rate R] [--seconds S]
(run under tests/fixtures/with-servers)
"""

import argparse
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from relaytest import (MONGO_URI, Broker, Int64, Relay, event, free_port, metric,  # noqa: E402
                       mqtt, pymongo, wait_until)


class Arrivals:
    """Arrival times of every message under @topic_filter (QoS 1)."""

    def __init__(self, broker, topic_filter):
        self.times, self.lock = [], threading.Lock()
        self.ready = threading.Event()
        self.client = mqtt.Client(client_id="bench-%d" % os.getpid(), protocol=mqtt.MQTTv5)
        self.client.on_connect = lambda c, *a, **k: c.subscribe(topic_filter, qos=1)
        self.client.on_subscribe = lambda *a, **k: self.ready.set()
        self.client.on_message = self._on_message
        self.client.connect("127.0.0.1", broker.port)
        self.client.loop_start()
        self.ready.wait(10)

    def _on_message(self, client, userdata, msg):
        with self.lock:
            self.times.append(time.monotonic())

    def snapshot(self):
        with self.lock:
            return list(self.times)

    def close(self):
        self.client.loop_stop()
        self.client.disconnect()


def pacing(relay_bin, rate, seconds):
    client = pymongo.MongoClient(MONGO_URI)
    dbname, cname = "bench_pacing_%d" % os.getpid(), "things"
    coll = client[dbname][cname]
    total = int(rate * (seconds + 4))
    per = 50
    docs = [{"_id": "e%d" % i, "version": Int64(1), "eventSeq": Int64(per),
             "events": [event(s) for s in range(1, per + 1)]} for i in range(total // per + 1)]
    for k in range(0, len(docs), 200):
        coll.insert_many(docs[k:k + 200])
    broker = Broker("bench-pacing", extra="max_queued_messages 0\n")
    sub = Arrivals(broker, "outbox/%s/#" % cname)
    port = free_port()
    relay = Relay(relay_bin, dbname, [cname], "bench-pacing-%d" % os.getpid(),
                  ["--max-publish-rate", str(rate), "--metrics-listen", "127.0.0.1:%d" % port,
                   "--log-level", "info", "--max-buffered-events", "20000"],
                  mqtt_uri=broker.uri)
    try:
        if not wait_until(lambda: len(sub.snapshot()) > 0, 60):
            print("pacing: nothing arrived; relay log:\n" + relay.log_text()[-2000:])
            return 1
        first = sub.snapshot()[0]
        start, end = first + 1.0, first + 1.0 + seconds
        while time.monotonic() < end + 0.5:
            time.sleep(0.5)
        gauge = metric(port, "outbox_relay_publish_paced")
        times = sub.snapshot()
        n = sum(1 for t in times if start <= t < end)
        per_second = [sum(1 for t in times if start + i <= t < start + i + 1)
                      for i in range(seconds)]
        measured = n / seconds
        error = (measured - rate) / rate * 100
        ok = abs(error) <= 5
        print("pacing: --max-publish-rate %d, %d events in %d s: %.1f events/s (%+.2f%%, target "
              "within 5%%); per second min %d max %d; outbox_relay_publish_paced %s: %s" % (
                  rate, n, seconds, measured, error, min(per_second), max(per_second), gauge,
                  "OK" if ok else "FAIL"), flush=True)
        return 0 if ok else 1
    finally:
        relay.stop()
        sub.close()
        broker.close()
        client.drop_database(dbname)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("relay")
    parser.add_argument("what", nargs="*", default=["pacing"])
    parser.add_argument("--rate", type=int, default=1000)
    parser.add_argument("--seconds", type=int, default=30)
    args = parser.parse_args()
    if not MONGO_URI:
        print("bench_mqtt: OUTBOX_TEST_MONGODB_URI is not set (run under with-servers)")
        return 77
    rc = 0
    for what in args.what:
        if what == "pacing":
            rc |= pacing(args.relay, args.rate, args.seconds)
    return rc


if __name__ == "__main__":
    sys.exit(main())
