"""Failpoints, concurrent and slow clients, malformed wire messages."""
import os
import random
import socket
import struct
import subprocess
import sys
import threading
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from servertest import (DB, ServerTest, bson, make_client, next_change,  # noqa: E402
                        no_change, op_msg, raw_connect, read_reply)
from bson.binary import Binary  # noqa: E402
from bson.int64 import Int64  # noqa: E402
from bson.son import SON  # noqa: E402
from pymongo.errors import AutoReconnect, OperationFailure  # noqa: E402


class FailPoints(ServerTest):
    def test_times_skip_always_off(self):
        self.coll.insert_one({"_id": 1})
        self.failpoint("failCommand", {"times": 2}, failCommands=["count"], errorCode=8)
        for _ in range(2):
            with self.assertRaises(OperationFailure) as ctx:
                self.coll.estimated_document_count()
            self.assertCode(ctx, 8)
        self.assertEqual(self.coll.estimated_document_count(), 1)
        self.failpoint("failCommand", {"skip": 1}, failCommands=["count"], errorCode=8)
        self.assertEqual(self.coll.estimated_document_count(), 1)
        for _ in range(2):
            with self.assertRaises(OperationFailure):
                self.coll.estimated_document_count()
        self.failpoint("failCommand", "off")
        self.assertEqual(self.coll.estimated_document_count(), 1)
        self.failpoint("failCommand", "alwaysOn", failCommands=["find"], errorCode=2,
                       errorLabels=["CustomLabel"])
        for _ in range(3):
            with self.assertRaises(OperationFailure) as ctx:
                self.coll.find_one()
            self.assertTrue(ctx.exception.has_error_label("CustomLabel"))
        self.assertEqual(self.coll.estimated_document_count(), 1)  # other commands pass
        self.failpoint("failCommand", "off")
        self.assertEqual(self.coll.find_one(), {"_id": 1})

    def test_app_name_scopes_failpoint(self):
        a = self.new_client(appname="outbox-fp-a")
        b = self.new_client(appname="outbox-fp-b")
        self.failpoint("failCommand", "alwaysOn", failCommands=["find"], errorCode=8,
                       appName="outbox-fp-a")
        with self.assertRaises(OperationFailure):
            a[DB][self.coll.name].find_one()
        self.assertIsNone(b[DB][self.coll.name].find_one())

    def test_close_connection_and_retryable_writes(self):
        self.failpoint("failCommand", {"times": 1}, failCommands=["insert"],
                       closeConnection=True)
        self.coll.insert_one({"_id": 1})  # retryWrites (default) retries once
        self.assertEqual(self.coll.count_documents({}), 1)
        plain = self.new_client(retryWrites=False)
        self.failpoint("failCommand", {"times": 1}, failCommands=["insert"],
                       closeConnection=True)
        with self.assertRaises(AutoReconnect):
            plain[DB][self.coll.name].insert_one({"_id": 2})
        self.assertEqual(plain[DB][self.coll.name].count_documents({}), 1)

    def test_block_connection_blocks_only_that_command(self):
        slow = self.new_client(appname="outbox-fp-slow")
        self.failpoint("failCommand", {"times": 1}, failCommands=["count"],
                       blockConnection=True, blockTimeMS=1500, appName="outbox-fp-slow")
        took = {}

        def run():
            t0 = time.monotonic()
            slow[DB][self.coll.name].estimated_document_count()
            took["slow"] = time.monotonic() - t0
        th = threading.Thread(target=run)
        th.start()
        time.sleep(0.2)
        t0 = time.monotonic()
        for i in range(10):
            self.coll.insert_one({"_id": i})
            self.client.admin.command("ping")
        fast = time.monotonic() - t0
        th.join(10)
        self.assertGreaterEqual(took.get("slow", 0), 1.3)
        self.assertLess(fast, 1.2, "other clients waited for the blocked one")


class Concurrency(ServerTest):
    def test_threads_share_and_own_clients(self):
        errors = []
        clients = [self.new_client(maxPoolSize=8) for _ in range(4)]

        def work(t):
            try:
                coll = clients[t % 4][DB][self.coll.name]
                for i in range(40):
                    coll.insert_one({"t": t, "i": i})
                    coll.update_one({"t": t, "i": i}, {"$push": {"seen": t}})
                self.assertEqual(coll.count_documents({"t": t}), 40)
            except Exception as exc:  # noqa: BLE001 - collected for the main thread
                errors.append(exc)
        threads = [threading.Thread(target=work, args=(t,)) for t in range(16)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(60)
        self.assertEqual(errors, [])
        self.assertEqual(self.coll.count_documents({"seen.0": {"$exists": True}}), 640)

    def test_several_processes(self):
        code = ("import os, pymongo, sys\n"
                "c = pymongo.MongoClient(os.environ['OUTBOX_TEST_MONGODB_URI'])\n"
                "coll = c[%r][%r]\n"
                "for i in range(100):\n"
                "    coll.insert_one({'p': int(sys.argv[1]), 'i': i})\n"
                "    coll.find_one({'p': int(sys.argv[1]), 'i': i})\n" % (DB, self.coll.name))
        procs = [subprocess.Popen([sys.executable, "-c", code, str(n)]) for n in range(3)]
        self.assertEqual([p.wait(60) for p in procs], [0, 0, 0])
        self.assertEqual(len(list(self.coll.find({}, {"_id": 1}))), 300)

    def test_memory_released_after_connections_and_cursors(self):
        pid = os.environ.get("OUTBOX_TEST_MONGOD_PID")
        if not pid or not os.path.exists("/proc/%s/status" % pid):
            self.skipTest("server process unknown (not started by with-servers)")
        with open("/proc/%s/maps" % pid) as fh:
            asan = any("libasan" in ln or "libclang_rt.asan" in ln for ln in fh)
        if asan and "quarantine_size_mb=0" not in os.environ.get("ASAN_OPTIONS", ""):
            self.skipTest("server built with AddressSanitizer: its quarantine holds freed "
                          "memory, so RSS cannot show a leak")

        def rss_kib():
            with open("/proc/%s/status" % pid) as fh:
                return int(next(ln for ln in fh if ln.startswith("VmRSS:")).split()[1])

        self.coll.insert_many([{"_id": i, "pad": "x" * 2000} for i in range(40)])
        find = {"find": self.coll.name, "$db": DB, "batchSize": 1}

        def round_trip():
            socks = [raw_connect() for _ in range(150)]
            for s in socks:
                s.sendall(op_msg(find))
            ids = []
            for s in socks:
                reply = read_reply(s)
                self.assertEqual(reply["ok"], 1.0)
                ids.append(reply["cursor"]["id"])
            for s, cid in zip(socks, ids):  # close each cursor, then its connection
                s.sendall(op_msg({"killCursors": self.coll.name, "cursors": [cid],
                                  "$db": DB}))
            for s, cid in zip(socks, ids):
                self.assertEqual(read_reply(s)["cursorsKilled"], [cid])
                s.close()
            time.sleep(0.3)
        round_trip()
        before = rss_kib()
        for _ in range(4):
            round_trip()
        grown = rss_kib() - before
        # 600 connections and cursors over 80 KB of documents each: a leak shows as tens of MB
        self.assertLess(grown, 16 * 1024, "RSS grew by %d KiB over 600 connections+cursors"
                        % grown)

    def test_cursor_outlives_its_connection(self):
        # drivers run getMore on any pooled connection, and pools close idle ones
        self.coll.insert_many([{"_id": i} for i in range(5)])
        a = raw_connect()
        a.sendall(op_msg({"find": self.coll.name, "$db": DB, "batchSize": 2,
                          "sort": {"_id": 1}}))
        cid = read_reply(a)["cursor"]["id"]
        a.close()
        time.sleep(0.2)
        b = raw_connect()
        try:
            b.sendall(op_msg({"getMore": cid, "collection": self.coll.name, "$db": DB}))
            reply = read_reply(b)
            self.assertEqual([d["_id"] for d in reply["cursor"]["nextBatch"]], [2, 3, 4])
        finally:
            b.close()

    def test_concurrent_writers_and_watchers(self):
        """Every watcher sees every write exactly once, in one order, while writers race."""
        writers, per_writer, watchers = 4, 100, 3
        streams = [self.new_client()[DB][self.coll.name].watch(batch_size=50)
                   for _ in range(watchers)]
        seen = [[] for _ in range(watchers)]
        errors = []

        def watch(n):
            try:
                deadline = time.monotonic() + 30
                while len(seen[n]) < writers * per_writer and time.monotonic() < deadline:
                    ev = streams[n].try_next()
                    if ev is not None:
                        seen[n].append((ev["_id"]["_data"], ev["documentKey"]["_id"]))
            except Exception as exc:  # noqa: BLE001 - collected for the main thread
                errors.append(exc)

        def write(w):
            try:
                coll = self.new_client()[DB][self.coll.name]
                for i in range(per_writer):
                    coll.insert_one({"_id": "%d-%d" % (w, i)})
            except Exception as exc:  # noqa: BLE001
                errors.append(exc)
        threads = [threading.Thread(target=watch, args=(n,)) for n in range(watchers)]
        threads += [threading.Thread(target=write, args=(w,)) for w in range(writers)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(60)
        for st in streams:
            st.close()
        self.assertEqual(errors, [])
        expected = sorted("%d-%d" % (w, i) for w in range(writers) for i in range(per_writer))
        for n in range(watchers):
            tokens = [t for t, _ in seen[n]]
            self.assertEqual(sorted(k for _, k in seen[n]), expected, "watcher %d" % n)
            self.assertEqual(tokens, sorted(tokens), "watcher %d out of order" % n)
            self.assertEqual(seen[n], seen[0], "watchers disagree on the order")
        for w in range(writers):  # each writer's own inserts appear in its order
            mine = [k for _, k in seen[0] if k.startswith("%d-" % w)]
            self.assertEqual(mine, ["%d-%d" % (w, i) for i in range(per_writer)])

    def test_hundreds_of_connections(self):
        socks = [raw_connect() for _ in range(200)]
        try:
            for i, s in enumerate(socks):
                s.sendall(op_msg({"hello": 1, "$db": "admin"}, request_id=i + 1))
            for i, s in enumerate(socks):
                reply, response_to = read_reply(s, with_response_to=True)
                self.assertEqual(response_to, i + 1)
                self.assertEqual(reply.get("ok"), 1.0)
        finally:
            for s in socks:
                s.close()
        self.assertEqual(self.client.admin.command("ping")["ok"], 1.0)

    def test_slow_clients_do_not_block_others(self):
        stalled = raw_connect()
        stalled.sendall(struct.pack("<iiii", 200, 1, 0, 2013)[:10])  # half a header
        half = raw_connect()
        half.sendall(op_msg({"ping": 1, "$db": "admin"})[:30])  # half a message
        woke = {}
        stream = self.coll.watch(max_await_time_ms=4000)

        def waiter():
            woke["doc"] = stream.try_next()
            woke["at"] = time.monotonic()
        th = threading.Thread(target=waiter)
        th.start()
        time.sleep(0.3)
        t0 = time.monotonic()
        for i in range(20):
            self.db["side"].insert_one({"i": i})
            self.db["side"].find_one({"i": i})
        self.assertLess(time.monotonic() - t0, 2.0)
        t1 = time.monotonic()
        self.coll.insert_one({"_id": "wake"})
        th.join(10)
        stream.close()
        stalled.close()
        half.close()
        self.assertEqual(woke.get("doc", {}).get("documentKey"), {"_id": "wake"})
        self.assertLess(woke["at"] - t1, 1.5, "waiting getMore did not wake on the write")
        self.db["side"].drop()


# --------------------------------------------------------------------------------------


class BadInput(ServerTest):
    def tearDown(self):
        super().tearDown()
        # the server must still serve everyone else, and on a fresh connection
        c = make_client(serverSelectionTimeoutMS=5000)
        try:
            self.assertEqual(c.admin.command("ping")["ok"], 1.0)
            c[DB]["alive"].insert_one({"after": self.id()})
        finally:
            c.close()

    def expect_error_or_close(self, data, shutdown=False):
        s = raw_connect()
        try:
            try:
                s.sendall(data)
                if shutdown:
                    s.shutdown(socket.SHUT_WR)
            except (BrokenPipeError, ConnectionResetError):
                return None
            try:
                reply = read_reply(s)
            except socket.timeout:
                self.fail("server neither answered nor closed within 5 s")
            if reply is not None:
                self.assertEqual(reply.get("ok"), 0, reply)
                self.assertIsInstance(reply.get("code"), int)
                self.assertNotEqual(reply.get("code"), 0)
            return reply
        finally:
            s.close()

    def test_truncated_message(self):
        msg = op_msg({"ping": 1, "$db": "admin"})
        self.expect_error_or_close(msg[:len(msg) - 5], shutdown=True)
        self.expect_error_or_close(msg[:7], shutdown=True)

    def test_bad_lengths(self):
        body = op_msg({"ping": 1, "$db": "admin"})[16:]
        for length in (0, 8, 15, -1, 0x7FFFFFFF, 48000000 * 2):
            with self.subTest(length=length):
                self.expect_error_or_close(struct.pack("<iiii", length, 1, 0, 2013) + body)

    def test_invalid_bson(self):
        good = bson.encode({"ping": 1, "$db": "admin"})
        bad_len = struct.pack("<i", len(good) + 50) + good[4:]
        no_nul = good[:-1] + b"\x01"
        bad_type = good[:4] + b"\x7e" + good[5:]
        for name, body in (("length", bad_len), ("terminator", no_nul), ("type", bad_type)):
            with self.subTest(body=name):
                self.expect_error_or_close(op_msg(None, raw_body=body))
        self.expect_error_or_close(op_msg(None, raw_body=b""))

    def test_invalid_utf8_and_deep_nesting(self):
        doc = bson.encode({"ping": 1, "$db": "admin", "s": "abc"})
        doc = doc.replace(b"abc", b"\xff\xfe\xfd")
        s = raw_connect()
        try:
            s.sendall(op_msg(None, raw_body=doc))
            reply = read_reply(s)  # MongoDB may answer ok or refuse; never hang or crash
            self.assertTrue(reply is None or "ok" in reply)
        finally:
            s.close()
        inner = bson.encode({"x": 1})
        for _ in range(3000):  # built by hand: bson.encode() would hit Python's recursion limit
            elems = b"\x03x\x00" + inner + b"\x00"
            inner = struct.pack("<i", 4 + len(elems)) + elems
        body = bson.encode({"ping": 1, "$db": "admin"})[:-1] + b"\x03n\x00" + inner + b"\x00"
        body = struct.pack("<i", len(body)) + body[4:]
        s = raw_connect()
        try:  # MongoDB refuses depth > 200 or ignores the field; never hang or crash
            s.sendall(op_msg(None, raw_body=body))
            reply = read_reply(s)
            self.assertTrue(reply is None or "ok" in reply)
        finally:
            s.close()

    def test_random_garbage_messages(self):
        rnd = random.Random(20261122)
        opcodes = [2013, 2013, 2004, 2004, 1, 2012, 2010, 0, 4242]
        for n in range(120):
            body = bytes(rnd.getrandbits(8) for _ in range(rnd.randrange(0, 300)))
            if rnd.random() < 0.5 and body:  # often a plausible BSON length up front
                body = struct.pack("<i", len(body) - rnd.randrange(0, 3)) + body[4:]
            msg = struct.pack("<iiii", 16 + len(body), n, 0, rnd.choice(opcodes)) + body
            with self.subTest(n=n):
                self.expect_error_or_close(msg)

    def test_unknown_opcode_and_flags(self):
        body = bson.encode({"ping": 1, "$db": "admin"})
        self.expect_error_or_close(struct.pack("<iiii", 16 + 5 + len(body), 1, 0, 4242) +
                                   b"\x00\x00\x00\x00\x00" + body)
        reply = self.expect_error_or_close(op_msg({"ping": 1, "$db": "admin"}, flags=1 << 4))
        if reply is not None:
            self.assertEqual(reply["code"], 223)

    def test_checksum_and_document_sequence(self):
        def crc32c(data):
            crc = 0xFFFFFFFF
            for byte in data:
                crc ^= byte
                for _ in range(8):
                    crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
            return crc ^ 0xFFFFFFFF
        body = bson.encode({"insert": "alive", "$db": DB})
        docs = bson.encode({"seq": 1}) + bson.encode({"seq": 2})
        seq = struct.pack("<i", 4 + len("documents") + 1 + len(docs)) + b"documents\x00" + docs
        payload = struct.pack("<I", 1) + b"\x00" + body + b"\x01" + seq
        msg = struct.pack("<iiii", 16 + len(payload) + 4, 9, 0, 2013) + payload
        msg += struct.pack("<I", crc32c(msg))
        s = raw_connect()
        try:
            s.sendall(msg)
            reply, response_to = read_reply(s, with_response_to=True)
            self.assertEqual((reply.get("ok"), reply.get("n"), response_to), (1.0, 2, 9), reply)
        finally:
            s.close()
        self.expect_error_or_close(msg[:-4] + struct.pack("<I", crc32c(msg[:-4]) ^ 1))

    def test_more_to_come_then_ping_on_same_socket(self):
        s = raw_connect()
        try:
            s.sendall(op_msg({"insert": "alive", "$db": DB, "documents": [{"w0": 1}],
                              "writeConcern": {"w": 0}}, request_id=7, flags=2))
            s.sendall(op_msg({"ping": 1, "$db": "admin"}, request_id=8))
            reply, response_to = read_reply(s, with_response_to=True)
            self.assertEqual((reply.get("ok"), response_to), (1.0, 8))
        finally:
            s.close()


class RetryableWrites(ServerTest):
    """A write re-sent with the same lsid and txnNumber is applied once (drivers retry)."""

    def command(self, lsid, txn, cmd):
        """Sent over a raw socket: pymongo would put its own pooled session's lsid on it."""
        s = raw_connect()
        try:
            s.sendall(op_msg(SON(list(cmd.items()) + [
                ("lsid", lsid), ("txnNumber", Int64(txn)), ("$db", DB)])))
            reply = read_reply(s)
        finally:
            s.close()
        if reply.get("ok") != 1:
            raise OperationFailure(reply.get("errmsg"), reply.get("code"), reply)
        return reply

    def test_same_txn_number_executes_once(self):
        self.coll.insert_one({"_id": 1, "events": []})
        lsid = {"id": Binary(uuid.uuid4().bytes, 4)}
        upd = SON([("update", self.coll.name),
                   ("updates", [{"q": {"_id": 1}, "u": {"$push": {"events": 1}}}])])
        first, again = self.command(lsid, 1, upd), self.command(lsid, 1, upd)
        self.assertEqual((again["n"], again["nModified"]), (first["n"], first["nModified"]))
        self.assertEqual(self.coll.find_one({"_id": 1})["events"], [1])
        ins = SON([("insert", self.coll.name), ("documents", [{"_id": 2}])])
        self.assertEqual(self.command(lsid, 2, ins)["n"], 1)
        again = self.command(lsid, 2, ins)
        self.assertEqual((again["n"], again.get("writeErrors")), (1, None))
        fam = SON([("findAndModify", self.coll.name), ("query", {"_id": 1}),
                   ("update", {"$push": {"events": 2}}), ("new", True)])
        self.assertEqual(self.command(lsid, 3, fam)["value"]["events"], [1, 2])
        self.assertEqual(self.command(lsid, 3, fam)["value"]["events"], [1, 2])
        self.assertEqual(self.coll.find_one({"_id": 1})["events"], [1, 2])
        self.assertEqual(self.command(lsid, 4, upd)["nModified"], 1)  # a new txnNumber runs
        self.assertEqual(self.coll.find_one({"_id": 1})["events"], [1, 2, 1])
        with self.assertRaises(OperationFailure) as ctx:  # older than the session's latest
            self.command(lsid, 1, upd)
        self.assertEqual(ctx.exception.code, 225)
        other = {"id": Binary(uuid.uuid4().bytes, 4)}  # other sessions are independent
        self.assertEqual(self.command(other, 1, upd)["nModified"], 1)

    def test_retry_after_connection_lost_post_commit(self):
        self.coll.insert_one({"_id": 1, "events": []})
        stream = self.coll.watch()
        self.addCleanup(stream.close)
        self.failpoint("onPrimaryTransactionalWrite", {"times": 1}, closeConnection=True)
        self.coll.update_one({"_id": 1}, {"$push": {"events": "once"}})  # pymongo retries
        self.assertEqual(self.coll.find_one({"_id": 1})["events"], ["once"])
        self.failpoint("onPrimaryTransactionalWrite", {"times": 1}, closeConnection=True)
        self.coll.insert_one({"_id": 2})  # retried: no duplicate key error
        self.failpoint("onPrimaryTransactionalWrite", {"times": 1},
                       failBeforeCommitExceptionCode=91)
        with self.assertRaises(OperationFailure) as ctx:  # fails, nothing written
            self.command({"id": Binary(uuid.uuid4().bytes, 4)}, 1, SON([
                ("update", self.coll.name),
                ("updates", [{"q": {"_id": 1}, "u": {"$push": {"events": "never"}}}])]))
        self.assertEqual(ctx.exception.code, 91)
        ops = [(e["operationType"], e["documentKey"]["_id"]) for e in
               (next_change(stream), next_change(stream))]
        self.assertEqual(ops, [("update", 1), ("insert", 2)])
        self.assertIsNone(no_change(stream, 0.8), "a retried write emitted a second event")
        self.assertEqual(self.coll.find_one({"_id": 1})["events"], ["once"])
