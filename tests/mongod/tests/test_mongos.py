#!/usr/bin/python3
"""pymongo 3.11 against test-mongod --mongos --shards 2.

pymongo takes the server for a mongos (a Sharded topology); a collection sharded on
{tenant: 1, _id: 1} (its upper chunk moved to shard1 while empty) gets mongos 6.0's refusals
of single-document writes without the shard key; a change stream through mongos returns
both shards' changes in order with the shard key in documentKey, and resumes from a token
mongos handed out.
"""
import os
import socket
import struct
import sys
import time
import unittest

try:
    import pymongo
    import bson
    import bson.binary
    from bson.int64 import Int64
    from bson.min_key import MinKey
    from bson.son import SON
    from pymongo.errors import OperationFailure, WriteError
except ImportError as exc:  # pragma: no cover
    print("mongod-mongos-pymongo: SKIP: pymongo not importable (%s)" % exc)
    sys.exit(77)

URI = os.environ["OUTBOX_TEST_MONGODB_URI"].replace("directConnection=true", "")


def raw_command(port, cmd):
    """Runs `cmd` (with its own lsid) over OP_MSG on 127.0.0.1:port; returns the reply."""
    body = bson.encode(cmd)
    msg = struct.pack("<I", 0) + b"\x00" + body
    with socket.create_connection(("127.0.0.1", int(port)), timeout=10) as s:
        s.sendall(struct.pack("<iiii", 16 + len(msg), 1, 0, 2013) + msg)
        head = b""
        while len(head) < 4:
            head += s.recv(4 - len(head))
        data = head
        while len(data) < struct.unpack("<i", head)[0]:
            data += s.recv(65536)
    return bson.decode(data[21:])


class Mongos(unittest.TestCase):
    def setUp(self):
        self.client = pymongo.MongoClient(URI, serverSelectionTimeoutMS=5000)
        self.db = "pym_%d_%d" % (os.getpid(), int(time.time() * 1000) % 100000)
        admin = self.client.admin
        admin.command("enableSharding", self.db, primaryShard="shard0")
        admin.command("shardCollection", self.db + ".t", key={"tenant": 1, "_id": 1})
        admin.command("split", self.db + ".t", middle={"tenant": "m", "_id": MinKey()})
        admin.command("moveChunk", self.db + ".t", find={"tenant": "x"}, to="shard1")
        self.coll = self.client[self.db].t

    def tearDown(self):
        self.client.close()

    def test_is_mongos(self):
        self.assertTrue(self.client.is_mongos)
        self.assertEqual(self.client.admin.command("isMaster")["msg"], "isdbgrid")

    def test_refusals(self):
        self.coll.insert_many([{"tenant": "a", "_id": 1, "x": 1},
                               {"tenant": "z", "_id": 2, "x": 1}])
        with self.assertRaises(WriteError) as ctx:
            self.coll.update_one({"x": 1}, {"$set": {"y": 1}})
        self.assertEqual(ctx.exception.code, 72)
        self.assertIn("but this update targeted 2 shards", str(ctx.exception))
        with self.assertRaises(OperationFailure) as ctx:
            self.coll.find_one_and_update({"_id": 1}, {"$set": {"y": 1}})
        self.assertEqual(ctx.exception.code, 61)
        with self.assertRaises(WriteError) as ctx:
            self.coll.delete_one({"x": 1})
        self.assertEqual(ctx.exception.code, 61)
        self.assertEqual(self.coll.delete_one({"_id": 2}).deleted_count, 1)
        self.assertEqual(self.coll.update_many({}, {"$set": {"y": 2}}).modified_count, 1)

    def test_change_stream_merges_and_resumes(self):
        with self.coll.watch(max_await_time_ms=100) as stream:
            self.coll.insert_one({"tenant": "a", "_id": 1})
            self.coll.insert_one({"tenant": "z", "_id": 2})
            self.coll.insert_one({"tenant": "b", "_id": 3})
            got = []
            deadline = time.time() + 10
            while len(got) < 3 and time.time() < deadline:
                change = stream.try_next()
                if change:
                    got.append(change)
        self.assertEqual([c["documentKey"] for c in got],
                         [{"tenant": "a", "_id": 1}, {"tenant": "z", "_id": 2},
                          {"tenant": "b", "_id": 3}])
        with self.coll.watch(resume_after=got[0]["_id"], max_await_time_ms=100) as stream:
            self.assertEqual(stream.next()["documentKey"], {"tenant": "z", "_id": 2})
            self.assertEqual(stream.next()["documentKey"], {"tenant": "b", "_id": 3})


    def test_new_stream_token_replays_nothing(self):
        # 6.0 starts a stream opened without a resume point one tick after mongos's cluster
        # time (DocumentSourceChangeStream::getStartTimeForNewStream, r6.0
        # src/mongo/db/pipeline/document_source_change_stream.cpp), so the first (empty)
        # batch's token is past the write made just before: resuming from it replays nothing.
        self.coll.insert_one({"tenant": "a", "_id": 1})
        with self.coll.watch(max_await_time_ms=100) as stream:
            self.assertIsNone(stream.try_next())
            token = stream.resume_token
        self.assertIsNotNone(token)
        with self.coll.watch(resume_after=token, max_await_time_ms=100) as stream:
            self.assertIsNone(stream.try_next())
            self.coll.insert_one({"tenant": "z", "_id": 2})
            change = None
            deadline = time.time() + 10
            while change is None and time.time() < deadline:
                change = stream.try_next()
        self.assertEqual(change["documentKey"], {"tenant": "z", "_id": 2})

    def test_retryable_write_applied_once(self):
        # A retryable write re-sent with the same lsid and txnNumber is applied once: 6.0's
        # shards keep the executed statements in config.transactions and answer a retry from
        # them (r6.0 src/mongo/db/transaction_participant.cpp, checkStatementExecuted), so the
        # same holds through mongos (r6.0 src/mongo/s/commands/cluster_write_cmd.cpp passes
        # lsid and txnNumber on to the shards).
        self.coll.insert_many([{"tenant": "a", "_id": 1, "n": 0},
                               {"tenant": "z", "_id": 2, "n": 0}])
        db = self.client[self.db]
        # pymongo reuses pooled server sessions (the lsid of insert_many's implicit session,
        # which numbered its write 1): numbers above anything it used.
        with self.client.start_session() as session:
            inc = SON([("update", "t"),
                       ("updates", [{"q": {"tenant": "a", "_id": 1}, "u": {"$inc": {"n": 1}}},
                                    {"q": {"tenant": "z", "_id": 2}, "u": {"$inc": {"n": 1}}}]),
                       ("txnNumber", Int64(1001))])
            first = db.command(inc, session=session)
            again = db.command(inc, session=session)
            self.assertEqual((again["n"], again["nModified"]), (first["n"], first["nModified"]))
            self.assertEqual(sorted(d["n"] for d in self.coll.find()), [1, 1])
            fam = SON([("findAndModify", "t"), ("query", {"tenant": "a", "_id": 1}),
                       ("update", {"$inc": {"n": 1}}), ("new", True), ("txnNumber", Int64(1002))])
            self.assertEqual(db.command(fam, session=session)["value"]["n"], 2)
            self.assertEqual(db.command(fam, session=session)["value"]["n"], 2)
            inc["txnNumber"] = Int64(1003)  # a new number runs again
            self.assertEqual(db.command(inc, session=session)["nModified"], 2)
            inc["txnNumber"] = Int64(1001)  # older than the session's newest: 225
            with self.assertRaises(OperationFailure) as ctx:
                db.command(inc, session=session)
            self.assertEqual(ctx.exception.code, 225)
        self.assertEqual(sorted(d["n"] for d in self.coll.find()), [2, 3])

    def next_change(self, stream):
        deadline = time.time() + 10
        while time.time() < deadline:
            change = stream.try_next()
            if change:
                return change
        self.fail("no change within 10 s")

    def test_invalidate_token(self):
        # r6.0 src/mongo/db/pipeline/document_source_change_stream.cpp
        # (assertIsLegalSpecification): resumeAfter an invalidate token is 260; startAfter it
        # starts a new stream after the drop, which sees the collection created again.
        coll = self.client[self.db].plain
        coll.insert_one({"_id": 1})
        with coll.watch(max_await_time_ms=100) as stream:
            coll.drop()
            self.assertEqual(self.next_change(stream)["operationType"], "drop")
            invalidate = self.next_change(stream)
        self.assertEqual(invalidate["operationType"], "invalidate")
        with self.assertRaises(OperationFailure) as ctx:
            with coll.watch(resume_after=invalidate["_id"]) as stream:
                stream.try_next()
        self.assertEqual(ctx.exception.code, 260)
        with coll.watch(start_after=invalidate["_id"], max_await_time_ms=100) as stream:
            coll.insert_one({"_id": 2})
            change = self.next_change(stream)
        self.assertEqual((change["operationType"], change["documentKey"]), ("insert", {"_id": 2}))

    def test_database_stream_started_before_its_drop_ends(self):
        # A database stream started before its database's drop sees the drop and an
        # invalidate, then ends. Through mongos every shard ends its stream with the drop: both
        # invalidates came in the first batch, and the merged stream handed out nothing, ever
        # (F20 in tests/chaos/FINDINGS.md: a shard whose stream ended held the others back).
        db = self.client[self.db]
        self.coll.insert_many([{"tenant": "a", "_id": 1}, {"tenant": "z", "_id": 2}])
        with self.client.start_session() as session:
            db.plain.insert_one({"_id": 1}, session=session)
            before = session.operation_time
        self.client.drop_database(self.db)
        ops = []
        with db.watch(start_at_operation_time=before, max_await_time_ms=100) as stream:
            deadline = time.time() + 10
            while stream.alive and time.time() < deadline:
                change = stream.try_next()
                if change:
                    ops.append(change["operationType"])
            self.assertFalse(stream.alive, "the stream did not end: %s" % ops)
        self.assertEqual(ops[0], "insert")
        self.assertEqual(ops[-2:], ["dropDatabase", "invalidate"])

    def test_token_of_another_collection(self):
        # A token of an event this stream would not have produced is 280 (r6.0
        # src/mongo/db/pipeline/document_source_change_stream_ensure_resume_token_present.cpp).
        other = self.client[self.db].other
        with other.watch(max_await_time_ms=100) as stream:
            other.insert_one({"_id": 1})
            token = self.next_change(stream)["_id"]
        with self.assertRaises(OperationFailure) as ctx:
            with self.coll.watch(resume_after=token, max_await_time_ms=100) as stream:
                self.coll.insert_one({"tenant": "a", "_id": 5})
                self.next_change(stream)
        self.assertEqual(ctx.exception.code, 280)

    def failpoint(self, name, mode, **data):
        self.client.admin.command(SON([("configureFailPoint", name), ("mode", mode),
                                       ("data", data)]))
        self.addCleanup(self.client.admin.command, "configureFailPoint", name, mode="off")

    def test_fail_command_write_concern_error_keeps_its_labels(self):
        # 6.0's mongos runs the write, then adds failCommand's writeConcernError and its
        # errorLabels to the reply (r6.0 src/mongo/s/commands/strategy.cpp,
        # ExecCommandClient::_epilogue), so a driver retries on RetryableWriteError (the
        # retryable-writes spec test "InsertOne succeeds after retryable writeConcernError"
        # runs on sharded clusters).
        self.failpoint("failCommand", {"times": 1}, failCommands=["insert"],
                       errorLabels=["RetryableWriteError"],
                       writeConcernError={"code": 91, "errmsg": "Replication is being shut down"})
        reply = raw_command(self.client.address[1],
                            SON([("insert", "t"), ("documents", [{"tenant": "a", "_id": 9}]),
                                 ("$db", self.db)]))
        self.assertEqual(reply["writeConcernError"]["code"], 91)
        self.assertEqual(reply.get("errorLabels"), ["RetryableWriteError"])
        self.assertEqual(reply["n"], 1)  # the write ran

    def test_fail_getmore_after_cursor_checkout(self):
        # 6.0's mongos has this fail point (defined in r6.0 src/mongo/db/query/find_common.cpp,
        # checked by src/mongo/s/query/cluster_find.cpp): a change stream's getMore fails with its code,
        # labelled ResumableChangeStreamError when resumable, so a driver resumes from a
        # resumable code and reports any other.
        with self.coll.watch(max_await_time_ms=100) as stream:
            self.assertIsNone(stream.try_next())
            self.failpoint("failGetMoreAfterCursorCheckout", {"times": 1}, errorCode=6)
            self.coll.insert_one({"tenant": "a", "_id": 1})
            self.assertEqual(self.next_change(stream)["documentKey"], {"tenant": "a", "_id": 1})
            count = self.client.admin.command("configureFailPoint",
                                              "failGetMoreAfterCursorCheckout", mode="off")
            self.assertEqual(count["count"], 1)
            self.failpoint("failGetMoreAfterCursorCheckout", {"times": 1}, errorCode=2)
            with self.assertRaises(OperationFailure) as ctx:
                stream.try_next()
            self.assertEqual(ctx.exception.code, 2)

    def test_shard_only_fail_point_refused(self):
        # onPrimaryTransactionalWrite is a mongod fail point (r6.0
        # src/mongo/db/transaction_participant.cpp): a mongos does not have it, so it refuses it
        # rather than accept one that would never act.
        with self.assertRaises(OperationFailure):
            self.client.admin.command("configureFailPoint", "onPrimaryTransactionalWrite",
                                      mode="alwaysOn")

    def test_rename_unsharded_collection(self):
        # 6.0's mongos renames an unsharded collection on its database's primary shard
        # (r6.0 src/mongo/s/commands/cluster_rename_collection_cmd.cpp).
        db = self.client[self.db]
        db.before.insert_one({"_id": 1})
        self.client.admin.command("renameCollection", self.db + ".before",
                                  to=self.db + ".after")
        self.assertEqual(list(db.after.find()), [{"_id": 1}])
        self.assertNotIn("before", db.list_collection_names())

    def test_shard_collection_creates_key_index(self):
        # shardCollection on an empty collection creates the shard key's index (r6.0
        # src/mongo/db/s/shard_key_util.cpp, validateShardKeyIndexExistsOrCreateIfPossible).
        self.client.admin.command("shardCollection", self.db + ".h", key={"_id": "hashed"})
        names = {i["name"]: i["key"] for i in self.client[self.db].h.list_indexes()}
        self.assertEqual(names.get("_id_hashed"), {"_id": "hashed"})
        names = {i["name"]: i["key"] for i in self.coll.list_indexes()}
        self.assertEqual(names.get("tenant_1__id_1"), {"tenant": 1, "_id": 1})

    def test_hello_has_no_read_only(self):
        # 6.0's mongos hello (r6.0 src/mongo/s/commands/cluster_hello_cmd.cpp) has no readOnly.
        self.assertNotIn("readOnly", self.client.admin.command("hello"))
        self.assertNotIn("readOnly", self.client.admin.command("isMaster"))

    def test_transactions(self):
        # 6.0's mongos runs transactions (r6.0 src/mongo/s/transaction_router.cpp): each shard
        # a statement reaches joins, a commit with one participant is sent to it, with several
        # it is a two-phase commit; nothing is visible outside before the commit, and an
        # aborted transaction leaves nothing.
        self.coll.insert_many([{"tenant": "a", "_id": 1, "n": 0},
                               {"tenant": "z", "_id": 2, "n": 0}])
        with self.client.start_session() as session:
            with session.start_transaction():
                self.coll.update_one({"tenant": "a", "_id": 1}, {"$inc": {"n": 1}},
                                     session=session)
                self.assertEqual(self.coll.find_one({"_id": 1}, session=session)["n"], 1)
                self.assertEqual(self.coll.find_one({"_id": 1})["n"], 0)  # not yet
            self.assertEqual(self.coll.find_one({"_id": 1})["n"], 1)
            with session.start_transaction():  # both shards
                self.coll.update_one({"tenant": "a", "_id": 1}, {"$inc": {"n": 1}},
                                     session=session)
                self.coll.update_one({"tenant": "z", "_id": 2}, {"$inc": {"n": 1}},
                                     session=session)
                self.coll.insert_one({"tenant": "q", "_id": 3, "n": 1}, session=session)
                self.assertEqual(self.coll.count_documents({}, session=session), 3)
                self.assertEqual(self.coll.count_documents({}), 2)
            self.assertEqual(sorted(d["n"] for d in self.coll.find()), [1, 1, 2])
            session.start_transaction()
            self.coll.update_many({}, {"$inc": {"n": 10}}, session=session)
            session.abort_transaction()
        self.assertEqual(sorted(d["n"] for d in self.coll.find()), [1, 1, 2])

    def test_several_mongoses(self):
        # --mongos-count 2: two routers over the same shards, each on its own port. A write
        # retried through the other mongos is applied once (6.0 keeps the record on the
        # shards, r6.0 src/mongo/db/transaction_participant.cpp), and each sees the other's
        # writes and catalog.
        try:
            with open(os.environ.get("OUTBOX_TEST_MONGOD_PORT_FILE", "")) as f:
                ports = f.read().split()
        except OSError:
            ports = []
        if len(ports) < 2:
            self.skipTest("needs test-mongod --mongos --mongos-count 2")
        other = pymongo.MongoClient("mongodb://127.0.0.1:%s/" % ports[1],
                                    serverSelectionTimeoutMS=5000)
        self.addCleanup(other.close)
        self.assertEqual(other.admin.command("isMaster")["msg"], "isdbgrid")
        self.coll.insert_one({"tenant": "a", "_id": 1, "n": 0})
        lsid = {"id": bson.binary.Binary(os.urandom(16), 4)}
        inc = SON([("update", "t"),
                   ("updates", [{"q": {"tenant": "a", "_id": 1}, "u": {"$inc": {"n": 1}}}]),
                   ("lsid", lsid), ("txnNumber", Int64(7))])
        inc["$db"] = self.db
        raw_command(ports[0], inc)  # raw: pymongo would put its own session's lsid on it
        again = raw_command(ports[1], inc)
        self.assertEqual(again["n"], 1)
        self.assertEqual(other[self.db].t.find_one({"_id": 1})["n"], 1)
        self.assertEqual(other.config.collections.count_documents({"_id": self.db + ".t"}), 1)

    def test_write_conflict_in_transaction_is_transient(self):
        # A statement of a transaction that meets another transaction's write fails as a
        # command (112 WriteConflict) with TransientTransactionError, through mongos as on a
        # shard (r6.0 src/mongo/s/transaction_router.cpp passes the shard's error on), so a
        # driver's withTransaction retries it.
        self.coll.insert_one({"tenant": "a", "_id": 1, "n": 0})
        with self.client.start_session() as first, self.client.start_session() as second:
            first.start_transaction()
            self.coll.update_one({"tenant": "a", "_id": 1}, {"$inc": {"n": 1}}, session=first)
            second.start_transaction()
            with self.assertRaises(OperationFailure) as ctx:
                self.coll.update_one({"tenant": "a", "_id": 1}, {"$inc": {"n": 1}},
                                     session=second)
            self.assertEqual(ctx.exception.code, 112)
            self.assertTrue(ctx.exception.has_error_label("TransientTransactionError"))
            second.abort_transaction()
            first.commit_transaction()
        self.assertEqual(self.coll.find_one({"_id": 1})["n"], 1)

if __name__ == "__main__":
    unittest.main()
