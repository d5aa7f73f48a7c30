#!/usr/bin/env python3
# Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
"""The relay refuses a sharded lease or state collection behind mongos (issue 26): exit 78
and a message naming the collection. Until the test server has a mongos mode, a stand-in
that speaks just enough of the wire protocol (OP_QUERY for the handshake, OP_MSG) plays mongos (hello says "isdbgrid";
config.collections lists what the test says is sharded; every other command fails with 59).
No other server is needed: the broker's address is port 1.

usage: test_fake_mongos.py PATH-TO-outbox-relay   (under /usr/bin/python3: pymongo's bson)
"""
import os
import socket
import struct
import subprocess
import sys
import threading

import bson

OP_MSG, OP_QUERY, OP_REPLY = 2013, 2004, 1
EXE = sys.argv[1]


class FakeMongos:
    """Answers OP_MSG commands on a free loopback port, one thread per connection."""

    def __init__(self, sharded):
        self.sharded = sharded  # config.collections entries
        self.commands = []
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn):
        with conn:
            while True:
                head = self._read(conn, 16)
                if not head:
                    return
                length, request_id, _, opcode = struct.unpack("<iiii", head)
                body = self._read(conn, length - 16)
                if body is None:
                    return
                if opcode == OP_QUERY:  # the driver's first hello on a connection
                    start = body.index(b"\0", 4) + 1 + 8
                    cmd = bson.decode(body[start:start + struct.unpack("<i", body[start:start + 4])[0]])
                    reply = bson.encode(self._answer(cmd.get("$query", cmd)))
                    msg = struct.pack("<iqii", 0, 0, 0, 1) + reply
                    opcode = OP_REPLY
                elif opcode == OP_MSG:
                    cmd = bson.decode(body[5:5 + struct.unpack("<i", body[5:9])[0]])
                    msg = struct.pack("<iB", 0, 0) + bson.encode(self._answer(cmd))
                else:
                    return
                conn.sendall(struct.pack("<iiii", 16 + len(msg), 0, request_id, opcode) + msg)

    @staticmethod
    def _read(conn, n):
        data = b""
        while len(data) < n:
            chunk = conn.recv(n - len(data))
            if not chunk:
                return None
            data += chunk
        return data

    def _answer(self, cmd):
        name = next(iter(cmd))
        self.commands.append(name)
        if name.lower() in ("hello", "ismaster"):
            return {"isWritablePrimary": True, "ismaster": True, "msg": "isdbgrid",
                    "maxBsonObjectSize": 16777216, "maxMessageSizeBytes": 48000000,
                    "maxWriteBatchSize": 100000, "minWireVersion": 0, "maxWireVersion": 17,
                    "logicalSessionTimeoutMinutes": 30, "ok": 1.0}
        if name == "find" and cmd[name] == "collections" and cmd.get("$db") == "config":
            wanted = cmd.get("filter", {}).get("_id", {}).get("$in", [])
            batch = [e for e in self.sharded if e["_id"] in wanted]
            return {"cursor": {"firstBatch": batch, "id": bson.int64.Int64(0),
                               "ns": "config.collections"}, "ok": 1.0}
        return {"ok": 0.0, "errmsg": "not played by the stand-in mongos", "code": 59}


def run_relay(mongos, *extra):
    uri = "mongodb://127.0.0.1:%d/?serverSelectionTimeoutMS=2000" % mongos.port
    env = dict(os.environ, MONGOC_DISABLE_SHM="1")
    args = [EXE, "--mongodb-uri", uri, "--database", "shop", "--collection", "orders",
            "--mqtt-uri", "tcp://127.0.0.1:1", "--name", "fake"] + list(extra)
    try:
        r = subprocess.run(args, capture_output=True, text=True, timeout=30, env=env)
        return r.returncode, r.stdout + r.stderr
    except subprocess.TimeoutExpired as e:  # run() killed it
        out = e.stdout or b""
        out = out.decode(errors="replace") if isinstance(out, bytes) else out
        return None, "still running after 30 s: %s" % out[-2000:]


def main():
    failures = []
    mongos = FakeMongos([{"_id": "shop.outbox_relay_state", "key": {"_id": "hashed"}}])
    rc, out = run_relay(mongos)
    if rc != 78 or "shop.outbox_relay_state is sharded" not in out:
        failures.append("sharded state collection: exit %s, output:\n%s" % (rc, out))

    mongos = FakeMongos([{"_id": "shop.leases", "key": {"relay": 1, "_id": 1}}])
    rc, out = run_relay(mongos, "--lease-collection", "leases")
    if rc != 78 or "lease collection shop.leases is sharded" not in out:
        failures.append("sharded lease collection: exit %s, output:\n%s" % (rc, out))
    for f in failures:
        print("FAIL:", f)
    print("%d failure(s)" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
