"""Transactions as pymongo 3.11 and raw commands see them (part of test_server.py).

Atomic commit, abort, snapshot reads, write conflicts and with_transaction's retry, the
change events of a committed transaction (lsid, txnNumber, one clusterTime, ordered and
resumable tokens), and the session rules mongod 6.0 applies to transaction statements
(checked with raw OP_MSG commands, so no driver rewrites lsid or txnNumber).
"""
import threading
import time
import uuid

from bson.binary import Binary, UUID_SUBTYPE
from bson.int64 import Int64
from bson.son import SON
from pymongo.errors import OperationFailure

from servertest import DB, ServerTest, next_change, no_change, op_msg, raw_connect, read_reply


def uuid_bytes(value):
    """A session id's 16 bytes, however pymongo decoded it (UUID or Binary)."""
    return value.bytes if isinstance(value, uuid.UUID) else bytes(value)


class Transactions(ServerTest):
    def test_commit_is_atomic_and_reads_see_a_snapshot(self):
        self.coll.insert_one({"_id": 0, "v": 0})
        with self.client.start_session() as s:
            s.start_transaction()
            self.assertEqual(self.coll.count_documents({}, session=s), 1)  # the snapshot
            self.coll.insert_one({"_id": "outside"})
            self.coll.insert_one({"_id": 1}, session=s)
            self.coll.update_one({"_id": 0}, {"$set": {"v": 1}}, session=s)
            self.assertEqual(sorted(d["_id"] for d in self.coll.find({}, session=s)),
                             [0, 1], "own writes on the snapshot, not the later insert")
            self.assertEqual(self.coll.find_one({"_id": 0})["v"], 0, "invisible outside")
            s.commit_transaction()
        self.assertEqual(self.coll.count_documents({}), 3)
        self.assertEqual(self.coll.find_one({"_id": 0})["v"], 1)

    def test_abort_and_session_end_leave_nothing(self):
        with self.client.start_session() as s:
            s.start_transaction()
            self.coll.insert_one({"_id": 1}, session=s)
            s.abort_transaction()
            s.start_transaction()
            self.coll.insert_one({"_id": 2}, session=s)
        self.assertEqual(self.coll.count_documents({}), 0)

    def test_write_conflict_and_with_transaction_retry(self):
        self.coll.insert_one({"_id": 0, "v": 0})
        holder = self.client.start_session()
        holder.start_transaction()
        self.coll.update_one({"_id": 0}, {"$inc": {"v": 1}}, session=holder)
        attempts = []

        def callback(session):
            attempts.append(1)
            try:
                self.coll.update_one({"_id": 0}, {"$inc": {"v": 10}}, session=session)
            except OperationFailure as exc:
                self.assertEqual(exc.code, 112)
                self.assertTrue(exc.has_error_label("TransientTransactionError"))
                holder.commit_transaction()  # the conflict ends: the retry succeeds
                raise
        with self.client.start_session() as s:
            s.with_transaction(callback)
        holder.end_session()
        self.assertEqual(len(attempts), 2)
        self.assertEqual(self.coll.find_one({"_id": 0})["v"], 11)

    def test_change_events_of_a_transaction(self):
        stream = self.coll.watch(max_await_time_ms=200)
        with self.client.start_session() as s:
            s.start_transaction()
            self.coll.insert_one({"_id": 1}, session=s)
            self.coll.insert_one({"_id": 2}, session=s)
            self.coll.delete_one({"_id": 1}, session=s)
            s.commit_transaction()
            s.start_transaction()
            self.coll.insert_one({"_id": 3}, session=s)
            s.abort_transaction()
            lsid = s.session_id
        self.coll.insert_one({"_id": "after"})
        events = [next_change(stream) for _ in range(4)]
        txn = events[:3]
        self.assertEqual([e["operationType"] for e in txn], ["insert", "insert", "delete"])
        for e in txn:
            self.assertEqual(uuid_bytes(e["lsid"]["id"]), uuid_bytes(lsid["id"]))
            self.assertIsInstance(e["txnNumber"], Int64)
            self.assertEqual(e["clusterTime"], txn[0]["clusterTime"])
        tokens = [e["_id"]["_data"] for e in events]
        self.assertEqual(tokens, sorted(set(tokens)), "distinct tokens in stream order")
        self.assertNotIn("lsid", events[3], "the aborted transaction left no event")
        self.assertEqual(events[3]["documentKey"], {"_id": "after"})
        stream.close()
        resumed = self.coll.watch(resume_after=txn[0]["_id"], max_await_time_ms=200)
        self.assertEqual(next_change(resumed)["_id"], txn[1]["_id"], "resume inside it")
        self.assertEqual(next_change(resumed)["_id"], txn[2]["_id"])
        resumed.close()


class TransactionRules(ServerTest):
    """mongod 6.0's TransactionParticipant and transaction_validation, by raw commands."""

    def setUp(self):
        super().setUp()
        self.sock = raw_connect()
        self.lsid = {"id": Binary(uuid.uuid4().bytes, UUID_SUBTYPE)}
        self.request = 0

    def tearDown(self):
        self.sock.close()
        super().tearDown()

    def run_cmd(self, name, value, number=None, db=DB, **fields):
        cmd = SON([(name, value)])
        cmd.update(fields)
        cmd["lsid"] = self.lsid
        if number is not None:
            cmd["txnNumber"] = Int64(number)
        cmd["$db"] = db
        self.request += 1
        self.sock.sendall(op_msg(cmd, self.request))
        return read_reply(self.sock)

    def stmt(self, name, value, number, start=False, **fields):
        if start:
            fields["startTransaction"] = True
        return self.run_cmd(name, value, number, autocommit=False, **fields)

    def finish(self, name, number, **fields):
        return self.run_cmd(name, 1, number, db="admin", autocommit=False, **fields)

    def assertError(self, reply, code, label=None):
        self.assertEqual((reply["ok"], reply.get("code")), (0.0, code), reply)
        if label:
            self.assertIn(label, reply.get("errorLabels", []), reply)

    def test_transaction_numbers(self):
        name = self.coll.name
        self.assertEqual(self.stmt("insert", name, 5, True, documents=[{"_id": 1}])["ok"], 1)
        self.assertError(self.run_cmd("insert", name, 5, documents=[{"_id": 2}]), 217)
        self.assertError(self.run_cmd("insert", name, 4, documents=[{"_id": 2}]), 225)
        self.assertError(self.stmt("insert", name, 5, True, documents=[{"_id": 2}]), 117)
        self.assertError(self.stmt("insert", name, 6, documents=[{"_id": 2}]), 251,
                         "TransientTransactionError")
        self.assertEqual(self.finish("commitTransaction", 5)["ok"], 1)
        self.assertEqual(self.finish("commitTransaction", 5)["ok"], 1, "commit is retryable")
        self.assertError(self.finish("abortTransaction", 5), 256)
        self.assertError(self.stmt("find", name, 5), 256)
        self.assertEqual(self.coll.count_documents({}), 1)

    def test_refusals_that_keep_the_transaction(self):
        name = self.coll.name
        self.stmt("insert", name, 1, True, documents=[{"_id": 1}])
        self.assertError(self.stmt("count", name, 1), 263)
        self.assertError(self.stmt("listCollections", 1, 1), 263)
        self.assertError(self.stmt("find", name, 1, readConcern={"level": "local"}), 72)
        self.assertError(self.stmt("insert", name, 1, documents=[{}], writeConcern={"w": 1}),
                         72)
        self.assertError(self.run_cmd("ping", 1, 1, autocommit=False, db="admin"), 263)
        self.assertError(self.run_cmd("find", name, 1), 50768)
        self.assertEqual(self.finish("commitTransaction", 1)["ok"], 1)
        self.assertEqual(self.coll.count_documents({}), 1)

    def test_errors_that_abort_the_transaction(self):
        name = self.coll.name
        self.stmt("insert", name, 1, True, documents=[{"_id": 1}])
        reply = self.stmt("insert", name, 1, documents=[{"_id": 1}, {"_id": 2}], ordered=False)
        self.assertEqual(reply["ok"], 1)
        self.assertEqual([e["code"] for e in reply["writeErrors"]], [11000], "batch ends")
        self.assertNotIn("errorLabels", reply)
        self.assertError(self.finish("commitTransaction", 1), 251, "TransientTransactionError")
        self.stmt("insert", name, 2, True, documents=[{"_id": 1}])
        self.assertEqual(self.run_cmd("killSessions", [self.lsid], db="admin")["ok"], 1)
        self.assertError(self.finish("commitTransaction", 2), 251)
        self.assertEqual(self.coll.count_documents({}), 0)

    def test_ddl_waits_and_new_statements_time_out_behind_it(self):
        name = self.coll.name
        self.coll.insert_one({"_id": 1})
        self.stmt("find", name, 1, True)  # session 1 uses the collection
        result = {}

        def drop():
            try:
                self.db.command("drop", name, maxTimeMS=5000)
                result["drop"] = "ok"
            except OperationFailure as exc:
                result["drop"] = exc.code
        dropper = threading.Thread(target=drop)
        dropper.start()
        # A new transaction queues behind the waiting drop: LockTimeout, transient. Until the
        # drop waits, the new transaction's read succeeds and is ended again.
        other = self.client.start_session()
        deadline = time.monotonic() + 4
        code = None
        while code is None and time.monotonic() < deadline:
            other.start_transaction()
            try:
                self.coll.find_one({}, session=other)
                other.abort_transaction()
            except OperationFailure as exc:
                code = exc.code
                self.assertTrue(exc.has_error_label("TransientTransactionError"))
                other.abort_transaction()
        self.assertEqual(code, 24, "LockTimeout behind the waiting drop")
        self.assertEqual(self.finish("commitTransaction", 1)["ok"], 1)
        dropper.join()
        other.end_session()
        self.assertEqual(result["drop"], "ok", "the drop ran once the transaction ended")

    def test_cursors_and_ddl_in_a_transaction(self):
        name = self.coll.name
        self.coll.insert_many([{"_id": i} for i in range(5)])
        reply = self.stmt("find", name, 1, True, batchSize=2)
        cursor = reply["cursor"]["id"]
        self.assertEqual(len(self.stmt("getMore", cursor, 1, collection=name,
                                       batchSize=2)["cursor"]["nextBatch"]), 2)
        self.assertError(self.stmt("createIndexes", name, 1,
                                   indexes=[{"key": {"a": 1}, "name": "a_1"}]), 263)
        self.stmt("find", name, 2, True)
        self.assertEqual(self.stmt("create", name + "_new", 2)["ok"], 1)
        self.assertEqual(self.stmt("createIndexes", name + "_new", 2,
                                   indexes=[{"key": {"a": 1}, "name": "a_1"}])["ok"], 1)
        self.assertNotIn(name + "_new", self.db.list_collection_names(), "not before commit")
        self.assertEqual(self.finish("commitTransaction", 2)["ok"], 1)
        self.assertIn("a_1", [ix["name"] for ix in self.db[name + "_new"].list_indexes()])
        self.db.drop_collection(name + "_new")
        self.assertError(self.run_cmd("getMore", Int64(cursor), collection=name), 43)
