# Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
"""What test-languages.py runs its programs with, and messages made as outbox-relay makes them
(relay/README.md, "The message contract") to inject duplicates and gaps."""
import json
import os
import subprocess
import time
from urllib.parse import quote, urlparse

import exampletest

try:
    import paho.mqtt.client as mqtt
    from paho.mqtt.packettypes import PacketTypes
    from paho.mqtt.properties import Properties
except ImportError:
    print("examples-languages: SKIP: needs paho-mqtt (run with /usr/bin/python3)")
    raise SystemExit(77)

WORKDIR = os.environ.get("OUTBOX_TEST_WORKDIR", "/tmp")


def wait_until(pred, timeout=60):
    """Polls `pred` until it is true or `timeout` seconds passed; returns its last value."""
    end = time.time() + timeout
    while time.time() < end:
        if pred():
            return True
        time.sleep(0.1)
    return pred()


class Process:
    """A child process whose stdout and stderr go to a log file in the fixture's workdir."""

    def __init__(self, name, argv, env=None):
        self.log = os.path.join(WORKDIR, "%s-%d.log" % (name, os.getpid()))
        self.out = open(self.log, "w")
        self.proc = subprocess.Popen(argv, stdout=self.out, stderr=subprocess.STDOUT, env=env)

    def lines(self):
        with open(self.log, errors="replace") as f:
            return [l.rstrip("\n") for l in f]

    def wait_for(self, pred, timeout=60):
        """Waits until pred(lines) holds; gives up early when the process has exited."""
        return wait_until(lambda: pred(self.lines()) or self.proc.poll() is not None,
                          timeout) and pred(self.lines())

    def wait(self, timeout=120):
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()
        finally:
            self.out.close()

    def stop(self, timeout=20):
        status, _ = exampletest.stop(self.proc, timeout)
        self.out.close()
        return status


def publisher(client_id):
    broker = urlparse(os.environ["OUTBOX_TEST_MQTT_URI"])
    client = mqtt.Client(client_id=client_id, protocol=mqtt.MQTTv5)
    client.connect(broker.hostname, broker.port)
    client.loop_start()
    return client


def publish_event(pub, collection, mode, entity, seq, event_id, etype):
    """Publishes an event as outbox-relay would, in payload mode `mode`."""
    encoded = quote(entity, safe="")  # as the relay encodes ids in topics and properties
    source, data = "/test/" + collection, {"injected": True}
    user = [("event-id", event_id), ("event-type", etype), ("entity-id", encoded),
            ("seq", str(seq))]
    props = Properties(PacketTypes.PUBLISH)
    if mode == "binary":
        user += [("specversion", "1.0"), ("id", event_id), ("source", source), ("type", etype),
                 ("subject", encoded)]
        payload, props.ContentType = json.dumps(data), "application/json"
    else:
        payload = json.dumps({"specversion": "1.0", "id": event_id, "source": source,
                              "type": etype, "subject": entity, "time": "2026-11-22T10:00:00Z",
                              "datacontenttype": "application/json", "seq": seq, "data": data})
        props.ContentType = "application/cloudevents+json"
    props.UserProperty = user
    info = pub.publish("outbox/%s/%s" % (collection, encoded), payload, qos=1, properties=props)
    info.wait_for_publish(timeout=30)
