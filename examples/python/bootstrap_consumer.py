#!/usr/bin/python3
# Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
"""Bootstrap a NEW consumer from the relay's archive (--archive-collection) while writers keep
writing, without missing or doubling an event (relay/README.md, "The archive and replay"):

  1. subscribe to the live topics and to a replay topic of its own, and hold what arrives;
     T = the time it subscribed;
  2. wait until no event committed before T is pending any more: the relay archives an event
     before it clears it, so every event from before T is then in the archive (an event the
     broker delivered before step 1 but not yet archived would otherwise be missed);
  3. replay the archive up to T plus a margin for writers' clocks to the replay topic
     (outbox-admin replay --until ... --topic REPLAY/{collection}/{id});
  4. apply the replayed and the held events together: duplicates dropped by event id, in seq
     order per entity; then apply live events as they come.

usage: bootstrap_consumer.py MQTT-URI LIVE-FILTER REPLAY-PREFIX -- OUTBOX-ADMIN [ARGS...]
  OUTBOX-ADMIN [ARGS...] is how to run outbox-admin with the relay's options (e.g.
  outbox-admin -c /etc/outbox-relay/relay.json); the script adds the commands.
prints "subscribed", "bootstrapped N" and per applied event "applied ENTITY SEQ EVENT-ID";
on SIGTERM it prints its read model as one JSON line {entity: [event ids in applied order]}.
"""
import datetime
import json
import signal
import subprocess
import sys
import threading
import time
from urllib.parse import urlparse

import paho.mqtt.client as mqtt

CLOCK_MARGIN_S = 5  # writers' clocks may run this much behind the server's

lock = threading.Lock()
held = []          # (event id, entity, seq) received before the bootstrap is done
replayed = [0]     # replayed messages received
bootstrapped = False
seen = set()       # event ids applied (a real service keeps them with its state: an inbox)
model = {}         # entity -> event ids in the order applied: the read model of this example


def apply(event_id, entity, seq):
    if event_id in seen:
        return
    seen.add(event_id)
    model.setdefault(entity, []).append(event_id)
    print("applied %s %d %s" % (entity, seq, event_id), flush=True)


def on_message(client, userdata, msg):
    ev = json.loads(msg.payload)
    item = (ev["id"], ev["subject"], int(ev["seq"]))
    with lock:
        replayed[0] += msg.topic.startswith(userdata + "/")
        if bootstrapped:
            apply(*item)
        else:
            held.append(item)


def admin(cmd, *args):
    out = subprocess.run(cmd + list(args), stdout=subprocess.PIPE, check=True, timeout=600)
    return [json.loads(line) for line in out.stdout.decode().splitlines() if line.strip()]


def wait_archived(cmd, since_ms):
    """Step 2: until no pending event has a time before since_ms."""
    while True:
        age_ms = int(time.time() * 1000) - since_ms
        if not admin(cmd, "pending", "--older-than", "%dms" % max(age_ms, 1), "--limit", "1",
                     "--json"):
            return
        time.sleep(0.2)


def bootstrap(cmd, prefix, subscribed_ms):
    global bootstrapped
    wait_archived(cmd, subscribed_ms)
    until = datetime.datetime.utcfromtimestamp(subscribed_ms / 1000 + CLOCK_MARGIN_S)
    report = admin(cmd, "replay", "--until", until.strftime("%Y-%m-%dT%H:%M:%SZ"), "--topic",
                   prefix + "/{collection}/{id}", "--json")[0]
    # Every replayed message is acknowledged by the broker: wait until all have arrived.
    while True:
        with lock:
            got = replayed[0]
        if got >= report["replayed"]:
            break
        time.sleep(0.05)
    time.sleep(0.5)  # live messages still on their way are held or applied alike
    with lock:
        for item in sorted(held, key=lambda x: (x[1], x[2])):
            apply(*item)
        held.clear()
        bootstrapped = True
        # Under the lock: print() writes the text and the newline separately, so a line from
        # the MQTT thread's apply() could land in between.
        print("bootstrapped %d" % report["replayed"], flush=True)


def main(uri, live, prefix, cmd):
    broker = urlparse(uri)
    client = mqtt.Client(client_id="bootstrap-%d" % time.time_ns(), protocol=mqtt.MQTTv5,
                         userdata=prefix)
    subscribed = threading.Event()
    client.on_message = on_message
    client.on_connect = lambda c, u, f, rc, p=None: c.subscribe([(live, 1), (prefix + "/#", 1)])
    client.on_subscribe = lambda *args: subscribed.set()
    client.connect(broker.hostname, broker.port or 1883)
    client.loop_start()
    subscribed.wait(30)
    subscribed_ms = int(time.time() * 1000)
    print("subscribed", flush=True)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *args: done.set())
    bootstrap(cmd, prefix, subscribed_ms)
    done.wait()
    client.loop_stop()
    with lock:
        print(json.dumps(model), flush=True)


if __name__ == "__main__":
    if len(sys.argv) < 6 or sys.argv[4] != "--":
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[5:])
