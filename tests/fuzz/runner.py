# Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
"""The fuzzer's moving parts: processes it always cleans up, the subscriber that records
every message, the writers (liboutbox's fuzz-writer, pymongo, the Node driver, the example
writers) and one relay run."""
import atexit
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request

import paho.mqtt.client as mqtt
import bson.errors
import pymongo.errors
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties
from bson.raw_bson import RawBSONDocument

import bsonenc

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples")
_children = []


def spawn(args, log_path, env=None, stdin=None, stdout=None):
    with open(log_path, "ab") as log:
        p = subprocess.Popen(args, stdin=stdin, stdout=stdout or log, stderr=log, env=env,
                             start_new_session=True)
    _children.append(p)
    return p


def stop(p, timeout=15):
    """SIGTERM, then SIGKILL; the exit status."""
    if p.poll() is None:
        os.killpg(p.pid, signal.SIGTERM)
        try:
            p.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    return p.returncode


@atexit.register
def _cleanup():
    for p in _children:
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def wait_until(pred, timeout, step=0.05):
    end = time.time() + timeout
    while time.time() < end:
        if pred():
            return True
        time.sleep(step)
    return pred()


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Subscriber:
    """Every message on the filters, in arrival order: (topic, payload, user properties,
    Message Expiry Interval or None)."""

    def __init__(self, uri, filters, client_id):
        host, port = uri.split("://")[1].rsplit(":", 1)
        self.lock = threading.Lock()
        self.messages = []
        self.last = time.time()
        self.ready = threading.Event()
        self.c = mqtt.Client(client_id=client_id, protocol=mqtt.MQTTv5)
        self.c.on_message = self._on_message
        self.c.on_subscribe = lambda *a: self.ready.set()
        self.c.on_connect = lambda c, u, f, rc, p=None: c.subscribe([(f_, 1) for f_ in filters])
        self.c.connect(host, int(port))
        self.c.loop_start()
        if not self.ready.wait(10):
            raise SystemExit("fuzz: the subscriber could not subscribe")

    def _on_message(self, client, userdata, msg):
        props = [tuple(p) for p in getattr(msg.properties, "UserProperty", [])] \
            if msg.properties else []
        expiry = getattr(msg.properties, "MessageExpiryInterval", None) \
            if msg.properties else None
        with self.lock:
            self.messages.append((msg.topic, msg.payload, props, expiry))
            self.last = time.time()

    def silent_for(self, seconds):
        return time.time() - self.last >= seconds

    def snapshot(self):
        with self.lock:
            return list(self.messages)

    def close(self):
        self.c.loop_stop()
        self.c.disconnect()


# -- writers ------------------------------------------------------------------------------

def lib_line(case):
    spec = case["lib"]
    hdrs = spec["headers"]
    fields = [str(case["n"]), bsonenc.value_doc("_id", case["entity"]).hex(),
              spec["type"].encode("utf-8", "surrogatepass").hex(),
              bsonenc.document(spec["data"]).hex(), str(len(hdrs))]
    for name, value in hdrs:
        fields += [name.encode("utf-8", "surrogatepass").hex() or "",
                   value.encode("utf-8", "surrogatepass").hex()]
    if "binary" in spec:
        ct = spec.get("content_type")
        fields += ["B", spec["binary"].hex(), "*" if ct is None else
                   ct.encode("utf-8", "surrogatepass").hex()]
    if "expires_at" in spec:
        fields += ["E", str(int(spec["expires_at"]))]
    # An empty hex field would vanish between spaces: "-" stands for the empty string.
    return " ".join(f if f else "-" for f in fields) + "\n"


def write_lib(writer, uri, db, coll, cases, log_path):
    """Runs fuzz-writer over the liboutbox cases; sets case["result"]."""
    if not cases:
        return
    p = spawn([writer, uri, db, coll], log_path, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    out, _ = p.communicate("".join(lib_line(c) for c in cases).encode(), timeout=120)
    by_n = {c["n"]: c for c in cases}
    for line in out.decode("utf-8", "replace").splitlines():
        f = line.split(" ", 4)
        if f[0] == "OK":
            by_n[int(f[1])]["result"] = {"ok": True, "id": f[2], "seq": int(f[3])}
        elif f[0] == "REFUSED":
            by_n[int(f[1])]["result"] = {"ok": False, "domain": int(f[2]), "code": int(f[3]),
                                         "message": f[4] if len(f) > 4 else ""}
    if p.returncode != 0:
        raise SystemExit("fuzz: fuzz-writer failed (status %d, see %s)" % (p.returncode,
                                                                          log_path))


def raw_document(case, follow):
    """The whole stored document of a raw case: the event under test, then a valid one."""
    return {"_id": case["entity"], "version": bsonenc.Int64(1), "eventSeq": bsonenc.Int64(2),
            "events": [case["event"], follow]}


def write_pymongo(coll, cases):
    for c in cases:
        try:
            coll.insert_one(RawBSONDocument(bsonenc.document(raw_document(c, c["follow"]))))
        except pymongo.errors.OperationFailure as e:
            raise SystemExit("fuzz: the server refused case %d (%s): %s" % (c["n"], c["what"], e))
        c["result"] = {"ok": True}


def node_expressible(doc):
    """Whether canonical extended JSON (and so the Node writer) can carry @doc exactly."""
    if isinstance(doc, (bsonenc.Raw, bsonenc.Pairs)):
        return False
    if isinstance(doc, bsonenc.Date) and abs(doc) > 8640000000000000:
        return False  # beyond a JavaScript Date: EJSON.parse makes an invalid Date of it
    if isinstance(doc, dict):
        return all(isinstance(k, str) and not k.startswith("$") and "\x00" not in k and
                   node_expressible(v) for k, v in doc.items())
    if isinstance(doc, list):
        return all(node_expressible(v) for v in doc)
    return True


def write_node(node_path, uri, db, coll, cases, log_path):
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "node-writer.js")
    lines = "".join("%d %s\n" % (c["n"], json.dumps(bsonenc.ejson(raw_document(c, c["follow"]))))
                    for c in cases)
    p = spawn(["node", script, uri, db, coll], log_path, stdin=subprocess.PIPE,
              stdout=subprocess.PIPE, env=dict(os.environ, NODE_PATH=node_path))
    out, _ = p.communicate(lines.encode(), timeout=120)
    done = {int(l.split()[1]) for l in out.decode().splitlines() if l.startswith("OK ")}
    for c in cases:
        if c["n"] in done:
            c["result"] = {"ok": True}
    if p.returncode != 0:
        raise SystemExit("fuzz: node-writer failed (status %d, see %s)" % (p.returncode, log_path))


# -- the relay ----------------------------------------------------------------------------

class Relay:
    def __init__(self, binary, workdir, tag, args):
        self.port = free_port()
        self.log_path = os.path.join(workdir, "relay-%s.log" % tag)
        self.args = [binary] + args + ["--metrics-listen", "127.0.0.1:%d" % self.port,
                                       "--log-file", self.log_path]
        self.proc = spawn(self.args, self.log_path)

    def log(self):
        try:
            with open(self.log_path, errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def wait_started(self):
        return wait_until(lambda: "change stream open" in self.log() or
                          self.proc.poll() is not None, 20) and self.proc.poll() is None

    def http(self, path):
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d%s" % (self.port, path),
                                        timeout=5) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()
        except OSError as e:
            return None, str(e)

    def metric_by(self, name, label):
        """{label value: value} of a metric's series."""
        _, text = self.http("/metrics")
        out = {}
        for line in (text or "").splitlines():
            m = re.match(r'%s\{%s="((?:[^"\\]|\\.)*)"\} (\S+)$' % (re.escape(name), label), line)
            if m:
                out[m.group(1)] = float(m.group(2))
        return out

    def metric(self, name):
        """The sum of a metric's series (0 when absent)."""
        _, text = self.http("/metrics")
        total = 0.0
        for line in (text or "").splitlines():
            if line.startswith(name + " ") or line.startswith(name + "{"):
                total += float(line.rsplit(" ", 1)[1])
        return total


# -- the example writers (examples/python/outbox_writer.py, examples/node/writer.js) -------

def write_examples(coll, node_path, uri, db, coll_name, cases, log_path):
    """The Python example writer in this process, the Node one in a child; sets
    case["result"] with the event id the writer made, or its refusal."""
    sys.path.insert(0, os.path.join(EXAMPLES, "python"))
    import outbox_writer
    lines = []
    for c in cases:
        spec = c["example"]
        if c["via"] == "python-example":
            try:
                ev = outbox_writer.create(coll, c["entity"], {}, [(spec["type"], spec["data"])])[0]
                c["result"] = {"ok": True, "id": ev["id"], "seq": 1}
            except (ValueError, pymongo.errors.PyMongoError, bson.errors.InvalidDocument) as e:
                c["result"] = {"ok": False, "message": str(e) or type(e).__name__}
        else:
            lines.append("%d %s\n" % (c["n"], json.dumps(bsonenc.ejson(
                {"id": c["entity"], "type": spec["type"], "data": spec["data"]}))))
    if not lines:
        return
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "node-example.js")
    p = spawn(["node", script, os.path.join(EXAMPLES, "node", "writer.js"), uri, db, coll_name],
              log_path, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
              env=dict(os.environ, NODE_PATH=node_path))
    out, _ = p.communicate("".join(lines).encode(), timeout=120)
    by_n = {c["n"]: c for c in cases}
    for line in out.decode().splitlines():
        f = line.split(" ", 2)
        if f[0] == "OK":
            by_n[int(f[1])]["result"] = {"ok": True, "id": f[2], "seq": 1}
        elif f[0] == "REFUSED":
            by_n[int(f[1])]["result"] = {"ok": False, "message": f[2] if len(f) > 2 else ""}
    if p.returncode != 0:
        raise SystemExit("fuzz: node-example failed (status %d, see %s)" % (p.returncode,
                                                                           log_path))
