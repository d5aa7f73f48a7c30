"""Shared helpers of the project's pymongo server tests (see test_server.py)."""
import os
import socket
import struct
import sys
import time
import unittest

try:
    import bson
    import pymongo
    from bson.son import SON
    from pymongo.errors import BulkWriteError
except ImportError as exc:  # pragma: no cover
    print("server-pymongo: SKIP: pymongo not importable by %s (%s); use /usr/bin/python3"
          % (sys.executable, exc))
    print("server-pymongo: 0 passed, 0 failed, 0 skipped")
    sys.exit(77)

URI = os.environ.get("OUTBOX_TEST_MONGODB_URI")
DB = "outbox_server_tests"
MiB16 = 16 * 1024 * 1024


def make_client(host=None, **kw):
    kw.setdefault("serverSelectionTimeoutMS", 10000)
    return pymongo.MongoClient(host or URI, **kw)


def next_change(stream, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        doc = stream.try_next()
        if doc is not None:
            return doc
    raise AssertionError("no change event within %.0f s" % timeout)


def no_change(stream, wait=1.5):
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        doc = stream.try_next()
        if doc is not None:
            return doc
    return None


class ServerTest(unittest.TestCase):
    client = None

    @classmethod
    def setUpClass(cls):
        cls.client = make_client()
        cls.db = cls.client[DB]

    @classmethod
    def tearDownClass(cls):
        cls.client.close()

    def setUp(self):
        try:  # fail at once rather than wait for server selection when the server is gone
            socket.create_connection(server_address(), timeout=2).close()
        except OSError as exc:
            self.fail("server unreachable: %s" % exc)
        self.coll = self.db[self.id().split(".", 1)[1].replace(".", "_")[-60:]]
        self.coll.drop()
        self.failpoints = []
        self.extra_clients = []

    def tearDown(self):
        for name in self.failpoints:
            self.client.admin.command({"configureFailPoint": name, "mode": "off"})
        for c in self.extra_clients:
            c.close()

    def failpoint(self, name, mode, **data):
        cmd = SON([("configureFailPoint", name), ("mode", mode)])
        if data:
            cmd["data"] = data
        self.client.admin.command(cmd)
        self.failpoints.append(name)

    def new_client(self, **kw):
        c = make_client(**kw)
        self.extra_clients.append(c)
        return c

    def assertCode(self, ctx, code):
        got = getattr(ctx.exception, "code", None)
        details = getattr(ctx.exception, "details", None)
        if isinstance(ctx.exception, BulkWriteError):
            got = [e["code"] for e in details["writeErrors"]]
            self.assertIn(code, got, details)
            return
        self.assertEqual(got, code, "%s %s" % (ctx.exception, details))


def server_address():
    node = pymongo.uri_parser.parse_uri(URI)["nodelist"][0]
    return node[0], node[1]


def raw_connect():
    s = socket.create_connection(server_address(), timeout=5)
    s.settimeout(5)
    return s


def op_msg(doc, request_id=1, flags=0, raw_body=None):
    body = raw_body if raw_body is not None else bson.encode(doc)
    payload = struct.pack("<I", flags) + b"\x00" + body
    return struct.pack("<iiii", 16 + len(payload), request_id, 0, 2013) + payload


def recv_exact(s, n):
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return buf


def read_reply(s, with_response_to=False):
    """The reply document, or None when the server closed the connection."""
    try:
        header = recv_exact(s, 16)
        if header is None:
            return (None, None) if with_response_to else None
        length, _, response_to, opcode = struct.unpack("<iiii", header)
        rest = recv_exact(s, length - 16)
    except (ConnectionResetError, BrokenPipeError):
        return (None, None) if with_response_to else None
    if opcode == 2013:
        doc = bson.decode(rest[5:])
    elif opcode == 1:
        doc = bson.decode(rest[20:])
    else:
        raise AssertionError("reply with opcode %d" % opcode)
    return (doc, response_to) if with_response_to else doc
