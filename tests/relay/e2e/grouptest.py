# Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
"""Helpers for the group tests: members (relays whose broker and, when asked, MongoDB
connections go through a proxy the test controls: tests/fixtures/tcpproxy.py), a load writer
thread that follows the stored contract, a subscriber that keeps arrival times, the verifier
(lost, first deliveries in order, duplicates) and MongoDB's hashed-index key in Python (an
independent implementation, to check which partition an entity is in)."""

import hashlib
import os
import re
import signal
import struct
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "fixtures"))
from relaytest import (MONGO_URI, MQTT_URI, WORKDIR, Entities, Int64, Subscriber,  # noqa: E402
                       event, mqtt_host_port, pymongo, wait_until)
from tcpproxy import Proxy  # noqa: E402
from deployment import proxied_uri, requires, target_host  # noqa: E402

import bson  # noqa: E402  (pymongo's)

# Short lease times keep the tests fast: a dead member's partitions move within ~3.5 s.
TTL, RENEW, MARGIN = 3000, 500, 1000
LEASE_OPTS = ["--lease-ttl-ms", str(TTL), "--lease-renew-ms", str(RENEW),
              "--lease-margin-ms", str(MARGIN)]


# ----------------------------------------------------------------------------------------------
# MongoDB's hashed-index key (src/mongo/db/hasher.cpp), for the _id types the tests use.

def mongo_hash(value):
    out = bytearray(struct.pack("<i", 0))  # seed
    if isinstance(value, bool):
        out += struct.pack("<i", 40) + bytes([1 if value else 0])
    elif isinstance(value, (int, Int64)):
        out += struct.pack("<i", 10) + struct.pack("<q", int(value))
    elif isinstance(value, str):
        raw = value.encode("utf-8")
        out += struct.pack("<i", 15) + struct.pack("<i", len(raw) + 1) + raw + b"\0"
    elif isinstance(value, bson.ObjectId):
        out += struct.pack("<i", 35) + value.binary
    elif isinstance(value, bson.Binary):
        out += struct.pack("<i", 30) + struct.pack("<i", len(value)) + bytes([value.subtype]) + \
            bytes(value)
    else:
        raise TypeError("mongo_hash: %r" % type(value))
    return struct.unpack("<q", hashlib.md5(bytes(out)).digest()[:8])[0]


def partition_of(value, n=32):
    return ((mongo_hash(value) + (1 << 63)) * n) >> 64


# ----------------------------------------------------------------------------------------------
# Members


class Member:
    """One outbox-relay of the group. Its broker connection always goes through a tapping
    proxy (mqtt_proxy.publishes_since() counts what it published); its MongoDB connection
    goes through one when mongo_proxy is asked for."""

    counter = 0

    def __init__(self, binary, db, colls, name, extra=(), mongo_proxy=False, metrics=False,
                 mongo_uri=None):
        Member.counter += 1
        self.n = Member.counter
        self.log_path = os.path.join(WORKDIR, "member-%s-%d.log" % (name, self.n))
        mongo_uri = mongo_uri or MONGO_URI
        self.mongo_proxy = None
        if mongo_proxy:
            # One proxy in front of the primary (or the first mongos), the member connected
            # directly to it: given the set, its driver would find the members' own
            # addresses in hello and go around the proxy. Skips where TLS forbids it.
            requires("single host")
            host, port = target_host().rsplit(":", 1)
            self.mongo_proxy = Proxy(host, int(port))
            mongo_uri = proxied_uri(self.mongo_proxy.port)
        mhost, mport = mqtt_host_port()
        self.mqtt_proxy = Proxy(mhost, mport, mqtt=True)
        args = [binary, "--mongodb-uri", mongo_uri, "--database", db,
                "--mqtt-uri", "tcp://127.0.0.1:%d" % self.mqtt_proxy.port, "--name", name,
                "--metrics-listen", "127.0.0.1:0" if metrics else "off",
                "--log-level", "info", "--checkpoint-interval-ms", "200",
                "--reconnect-min-ms", "100", "--reconnect-max-ms", "500"] + LEASE_OPTS
        for c in colls:
            args += ["--collection", c]
        args += list(extra)
        self.log = open(self.log_path, "ab")
        env = dict(os.environ, MONGOC_DISABLE_SHM="1")
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=self.log, env=env)
        self.stopped = False

    @property
    def pid(self):
        return self.proc.pid

    def log_text(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def wait_log(self, text, timeout=30):
        return wait_until(lambda: text in self.log_text() or self.proc.poll() is not None,
                          timeout) and text in self.log_text()

    def log_time_of(self, text, since=0):
        """The time (seconds since the epoch) of the first log line after `since` that
        contains `text`, or None."""
        import calendar
        for line in self.log_text().splitlines():
            if text not in line or len(line) < 24 or line[10] != "T":
                continue
            when = calendar.timegm(time.strptime(line[:19], "%Y-%m-%dT%H:%M:%S")) + \
                float(line[19:23])
            if when >= since:
                return when
        return None

    def http_get(self, path):
        """(status, body) of GET path on the member's metrics endpoint (metrics=True)."""
        import re
        import urllib.error
        import urllib.request
        if not self.wait_log("serving /metrics and /healthz", 10):
            raise AssertionError("no metrics endpoint in %s" % self.log_path)
        port = re.search(r"serving /metrics and /healthz on \S+ \(port (\d+)\)",
                         self.log_text()).group(1)
        try:
            with urllib.request.urlopen("http://127.0.0.1:%s%s" % (port, path), timeout=5) as r:
                return r.status, r.read().decode("utf-8")
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode("utf-8")

    def instance_prefix(self):
        """"<host>/<pid>/": the start of this member's instance id (lease owner)."""
        return "%s/%d/" % (os.uname().nodename, self.pid)

    def stop(self, timeout=30):
        """SIGTERM; returns the exit status; raises on a sanitizer report."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
        self._close()
        self.check_sanitizers()
        return rc

    def kill9(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self._close()

    def pause(self):
        os.kill(self.pid, signal.SIGSTOP)

    def resume(self):
        os.kill(self.pid, signal.SIGCONT)

    def _close(self):
        if not self.stopped:
            self.stopped = True
            self.log.close()
            self.mqtt_proxy.close()
            if self.mongo_proxy:
                self.mongo_proxy.close()

    def check_sanitizers(self):
        text = self.log_text()
        for marker in ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:"):
            if marker in text:
                at = text.index(marker)
                raise AssertionError("%s in %s:\n%s" % (marker, self.log_path,
                                                        text[at:at + 3000]))


class Group:
    """The group's documents as a test sees them."""

    def __init__(self, client, db, name, n=32):
        self.leases = client[db]["outbox_relay_state"]
        self.name, self.n = name, n

    def lease_docs(self):
        return {d["_id"]["partition"]: d for d in
                self.leases.find({"_id.relay": self.name, "_id.partition": {"$exists": True}})}

    def owners(self):
        """{partition: owner or None}"""
        return {p: d.get("owner") for p, d in self.lease_docs().items()}

    def counts(self, members):
        """Partitions owned by each member (in order)."""
        owners = self.owners()
        return [sum(1 for o in owners.values() if o and o.startswith(m.instance_prefix()))
                for m in members]

    def settled(self, members):
        c = self.counts(members)
        return sum(c) == self.n and max(c) - min(c) <= 1

    def owner_of(self, p, members):
        o = self.owners().get(p)
        for m in members:
            if o and o.startswith(m.instance_prefix()):
                return m
        return None


# ----------------------------------------------------------------------------------------------
# Load and verification


class TimedSubscriber(Subscriber):
    """A Subscriber that also keeps each message's arrival time."""

    def _on_message(self, client, userdata, msg):
        with self.lock:
            self.messages.append((msg.topic, msg.payload, time.time()))


class Load:
    """A thread appending events (contract-compliant, like liboutbox) to entities: `hot`
    entities get `hot_share` of the commits; every committed event id is recorded with its
    entity and seq."""

    def __init__(self, db, coll, ids, hot=(), hot_share=0.5, per_commit=2, delay=0.002):
        self.client = pymongo.MongoClient(MONGO_URI)
        self.ents = Entities(self.client[db][coll])
        self.ids, self.hot = list(ids), list(hot)
        self.hot_share, self.per_commit, self.delay = hot_share, per_commit, delay
        self.committed = {}  # event id -> (entity key, seq)
        self.stop_flag = threading.Event()
        self.lock = threading.Lock()
        self.commits = 0
        for eid in self.ids + self.hot:
            self._record(eid, self.ents.create(eid, 1))
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _record(self, eid, evs):
        with self.lock:
            for e in evs:
                self.committed[e["id"]] = (key_of(eid), int(e["seq"]))

    def _run(self):
        i = 0
        while not self.stop_flag.is_set():
            i += 1
            hot = self.hot and (i % 100) < self.hot_share * 100
            pool = self.hot if hot else self.ids
            eid = pool[i % len(pool)]
            self._record(eid, self.ents.append(eid, self.per_commit))
            self.commits += 1
            if self.delay:
                time.sleep(self.delay)

    def stop(self):
        self.stop_flag.set()
        self.thread.join()
        self.client.close()


def key_of(eid):
    """The entity as the relay renders it in `subject`: a string as itself (in double quotes
    if it would read as another id's rendering), ObjectId hex, or the canonical extended JSON
    of anything else, as libbson writes it (integers in decimal)."""
    if isinstance(eid, str):
        ambiguous = (eid == "" or eid[0] in "\"{[" or eid in ("null", "true", "false")
                     or re.fullmatch(r"-?[0-9]+", eid) is not None)
        if ambiguous:
            return '"%s"' % eid.replace("\\", "\\\\").replace('"', '\\"')
        return eid
    if isinstance(eid, int) and not isinstance(eid, bool):  # Int64 too
        return "%d" % int(eid)
    if isinstance(eid, bson.ObjectId):
        return str(eid)
    return None


def verify(committed, messages):
    """Checks delivery against what was committed. Returns a dict of figures: lost,
    out_of_order (first deliveries per entity not in increasing seq), duplicates, and
    first_seen (event id -> arrival time of its first delivery)."""
    import json
    first_seen, per_entity, dups = {}, {}, []
    for topic, payload, when in messages:
        ce = json.loads(payload.decode("utf-8"))
        if ce["id"] in first_seen:
            dups.append((ce["id"], when))
            continue
        first_seen[ce["id"]] = when
        per_entity.setdefault(ce["subject"], []).append(ce["seq"])
    out_of_order = sum(1 for seqs in per_entity.values()
                       for a, b in zip(seqs, seqs[1:]) if b <= a)
    lost = [i for i in committed if i not in first_seen]
    return {"lost": len(lost), "lost_ids": lost[:5], "out_of_order": out_of_order,
            "duplicates": len(dups), "dup_times": [t for _, t in dups],
            "first_seen": first_seen, "delivered": len(first_seen)}


def wait_all_delivered(committed, sub, timeout=60):
    return wait_until(lambda: len(committed) <= len({i for i in _ids(sub.snapshot())}),
                      timeout, 0.2)


def _ids(messages):
    import json
    for _, payload, _ in messages:
        yield json.loads(payload.decode("utf-8"))["id"]


def pending(coll):
    return sum(len(d.get("events", [])) for d in coll.find({"events.0": {"$exists": True}},
                                                          {"events": 1}))
