# Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
"""Helpers for the relay's integration tests: documents that follow the stored contract
(written with pymongo directly), an MQTT subscriber, and a relay process."""

import datetime
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid

try:
    import pymongo
    from bson.int64 import Int64
    import paho.mqtt.client as mqtt
except ImportError as exc:  # pragma: no cover
    print("relay-e2e: needs Debian's python3-pymongo and python3-paho-mqtt under "
          "/usr/bin/python3 (%s)" % exc, file=sys.stderr)
    sys.exit(77)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "fixtures"))
from deployment import (MONGO_URI, Skip, db_name, needing,  # noqa: E402,F401 (for the tests)
                        requires)

MQTT_URI = os.environ.get("OUTBOX_TEST_MQTT_URI", "")
WORKDIR = os.environ.get("OUTBOX_TEST_WORKDIR", "/tmp")


def mqtt_host_port(uri=MQTT_URI):
    rest = uri.split("://", 1)[1]
    host, port = rest.rsplit(":", 1)
    return host, int(port)


def wait_until(pred, timeout=30.0, step=0.05):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if pred():
            return True
        time.sleep(step)
    return pred()


def event(seq, etype="Changed", data=None):
    return {"id": str(uuid.uuid4()), "seq": Int64(seq), "type": etype,
            "time": datetime.datetime.utcnow().replace(microsecond=0),
            "data": data if data is not None else {"n": seq}}


def _key(eid):
    return repr(eid) if isinstance(eid, dict) else eid


class Entities:
    """Writes entities the way liboutbox does: version and eventSeq bumped with the $push."""

    def __init__(self, coll):
        self.coll = coll
        self.seq = {}
        self.ids = {}  # entity id -> [event ids in seq order]

    def create(self, eid, n_events=1, events=None, event_seq=None):
        evs = events if events is not None else [event(i + 1) for i in range(n_events)]
        seq = event_seq if event_seq is not None else len(evs)
        self.coll.insert_one({"_id": eid, "name": "x", "version": Int64(1),
                              "eventSeq": Int64(seq), "events": evs})
        self.seq[_key(eid)] = seq
        self.ids[_key(eid)] = [e["id"] for e in evs if isinstance(e, dict) and "id" in e]
        return evs

    def append(self, eid, n_events=1, events=None):
        start = self.seq[_key(eid)]
        evs = events if events is not None else [event(start + i + 1) for i in range(n_events)]
        self.coll.update_one({"_id": eid},
                             {"$push": {"events": {"$each": evs}},
                              "$inc": {"version": Int64(1), "eventSeq": Int64(len(evs))},
                              "$set": {"name": "y%d" % start}})
        self.seq[_key(eid)] = start + len(evs)
        self.ids[_key(eid)] += [e["id"] for e in evs if isinstance(e, dict) and "id" in e]
        return evs

    def pending(self):
        return sum(len(d.get("events", [])) for d in self.coll.find({}, {"events": 1}))


class Subscriber:
    """Collects every message under a topic filter (MQTT 5, QoS 1)."""

    def __init__(self, topic_filter, client_id=None, clean=True, uri=None):
        host, port = mqtt_host_port(uri or MQTT_URI)
        self.lock = threading.Lock()
        self.messages = []
        self.subscribed = threading.Event()
        self.filter = topic_filter
        self.connects = 0  # more than 1: messages may have been missed while it was away
        self.client = mqtt.Client(client_id=client_id or "sub-%s" % uuid.uuid4().hex[:12],
                                  protocol=mqtt.MQTTv5)
        self.client.on_message = self._on_message
        self.client.on_connect = self._on_connect
        self.client.on_subscribe = lambda *a, **k: self.subscribed.set()
        self.client.reconnect_delay_set(min_delay=1, max_delay=1)
        props = None
        if not clean:
            from paho.mqtt.properties import Properties
            from paho.mqtt.packettypes import PacketTypes
            props = Properties(PacketTypes.CONNECT)
            props.SessionExpiryInterval = 3600
        self.client.connect(host, port, keepalive=30, clean_start=clean, properties=props)
        self.client.loop_start()
        if not self.subscribed.wait(10):
            raise RuntimeError("subscriber could not subscribe to %s" % topic_filter)

    def _on_connect(self, client, userdata, flags, rc, properties=None):
        self.connects += 1
        client.subscribe(self.filter, qos=1)

    def _on_message(self, client, userdata, msg):
        props = {}
        p = getattr(msg, "properties", None)
        if p is not None:
            for k, v in getattr(p, "UserProperty", []) or []:
                props[k] = v
            props["$content-type"] = getattr(p, "ContentType", None)
            props["$expiry"] = getattr(p, "MessageExpiryInterval", None)
            props["$payload-format"] = getattr(p, "PayloadFormatIndicator", None)
        with self.lock:
            self.messages.append((msg.topic, msg.payload, props))

    def snapshot(self):
        with self.lock:
            return list(self.messages)

    def count(self):
        with self.lock:
            return len(self.messages)

    def close(self):
        self.client.loop_stop()
        self.client.disconnect()


class Relay:
    """One outbox-relay process; its log goes to a file in the work directory."""

    counter = 0

    def __init__(self, binary, db, colls, name, extra=(), mqtt_uri=None):
        Relay.counter += 1
        self.log_path = os.path.join(WORKDIR, "relay-%s-%d.log" % (name, Relay.counter))
        self.log = open(self.log_path, "ab")
        args = [binary, "--mongodb-uri", MONGO_URI, "--database", db, "--mqtt-uri", mqtt_uri or MQTT_URI,
                "--name", name, "--metrics-listen", "off", "--log-level", "debug",
                "--checkpoint-interval-ms", "200", "--reconnect-min-ms", "100",
                "--reconnect-max-ms", "1000"]
        for c in colls:
            args += ["--collection", c]
        args += list(extra)
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=self.log)

    def log_text(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def wait_log(self, text, timeout=20):
        return wait_until(lambda: text in self.log_text() or self.proc.poll() is not None,
                          timeout) and text in self.log_text()

    def stop(self, timeout=30):
        """SIGTERM, wait, and return the exit status. Raises if a sanitizer complained (in
        sanitizer builds its reports land in the relay's log)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout)
        finally:
            self.log.close()
        self.check_sanitizers()
        return rc

    def check_sanitizers(self):
        text = self.log_text()
        for marker in ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:"):
            if marker in text:
                at = text.index(marker)
                raise AssertionError("%s in %s:\n%s" % (marker, self.log_path,
                                                        text[at:at + 3000]))

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.log.close()
        # A SIGKILLed mongoc program leaves its counters file; a later process with the same
        # pid would warn about it on stderr before main().
        try:
            os.unlink("/dev/shm/mongoc-%d" % self.proc.pid)
        except OSError:
            pass


def metric(port, name):
    """One unlabelled sample of a relay's /metrics on @port; None if absent or unreachable."""
    try:
        text = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=5).read()
    except (OSError, urllib.error.URLError):
        return None
    for line in text.decode().splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return None


def free_port():
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Broker:
    """A mosquitto of the test's own, on a free loopback port, with extra config lines (a
    listener's options follow the listener line)."""

    def __init__(self, name, extra="", listener_extra=""):
        import getpass
        self.port = free_port()
        self.conf = os.path.join(WORKDIR, "mosquitto-%s.conf" % name)
        self.log_path = os.path.join(WORKDIR, "mosquitto-%s.log" % name)
        with open(self.conf, "w") as f:
            f.write("listener %d 127.0.0.1\n%sallow_anonymous true\npersistence false\n"
                    "user %s\nlog_dest stderr\n%s" % (self.port, listener_extra,
                                                     getpass.getuser(), extra))
        binary = "/usr/sbin/mosquitto" if os.path.exists("/usr/sbin/mosquitto") else "mosquitto"
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen([binary, "-c", self.conf], stdout=self.log,
                                     stderr=self.log)
        self.uri = "tcp://127.0.0.1:%d" % self.port
        if not wait_until(self._listening, 10):
            self.close()
            raise RuntimeError("mosquitto %s did not start: %s" %
                               (name, open(self.log_path).read()[-500:]))

    def _listening(self):
        import socket
        try:
            socket.create_connection(("127.0.0.1", self.port), 0.2).close()
            return True
        except OSError:
            return False

    def close(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def run_tests(name, tests, wanted, cleanup=None, skipped=0):
    """Runs @tests (all, or those named in @wanted), printing "ok"/"FAIL" lines, a
    "skip TEST: reason" line for each test that raised Skip (deployment.requires()), and the
    closing "NAME: N passed, N failed" line (", N skipped" when any skipped; @skipped adds
    tests the caller left out and said why); returns the exit status (77 without a MongoDB,
    or when every test skipped)."""
    import traceback
    if not MONGO_URI:
        print("%s: OUTBOX_TEST_MONGODB_URI is not set (run under with-servers)" % name)
        return 77
    passed = failed = 0
    # OUTBOX_TEST_ONLY="test_a test_b": of a suite that has any of these tests, only those
    # run (scripts/test --against's CI form picks a few tests of long suites this way).
    only = set(os.environ.get("OUTBOX_TEST_ONLY", "").split()) & {t.__name__ for t in tests}
    wanted = wanted or only
    try:
        for t in tests:
            if wanted and t.__name__ not in wanted:
                continue
            start = time.time()
            try:
                t()
                passed += 1
                print("ok   %s (%.1fs)" % (t.__name__, time.time() - start), flush=True)
            except Skip as why:
                skipped += 1
                print("skip %s: %s" % (t.__name__, why), flush=True)
            except Exception:
                failed += 1
                print("FAIL %s (%.1fs)" % (t.__name__, time.time() - start), flush=True)
                traceback.print_exc()
    finally:
        if cleanup:
            cleanup()
    print("%s: %d passed, %d failed%s" % (name, passed, failed,
                                          ", %d skipped" % skipped if skipped else ""))
    if failed:
        return 1
    return 77 if skipped and not passed else 0
