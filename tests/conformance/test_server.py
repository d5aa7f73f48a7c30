#!/usr/bin/python3
"""The project's own pymongo tests of the MongoDB test server (or of a real replica set).

usage: test_server.py [TestClass | TestClass.test_name ...]

What MongoDB's spec tests barely cover: $push/$pull on arrays of documents, $elemMatch,
$size, $exists, positional updates, duplicate keys, the 16 MiB limits, updateDescription
shapes seen through watch(), resuming (tokens, startAfter, startAtOperationTime, across a
forced disconnect), ChangeStreamHistoryLost, failpoints, transactions, concurrent and slow
clients and malformed wire messages. Every assertion is what MongoDB 6.0 does, so the same file passes
against `mongod --replSet rs0 --setParameter enableTestCommands=1` (set
OUTBOX_TEST_MONGODB_URI). Prints `server-pymongo: N passed, N failed, N skipped`.

The history-loss test needs to know the server's history bound: it runs when
tests/fixtures/with-servers started test-mongod with OUTBOX_TEST_MONGOD_OPLOG_SIZE entries
(meson test server-pymongo-history-loss), or when OUTBOX_TEST_HISTORY_BOUND=N says that N
writes push a resume point out of the server's history.
"""
import os
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from servertest import DB, MiB16, ServerTest, URI, bson, server_address  # noqa: E402
from bson.int64 import Int64  # noqa: E402
from bson.son import SON  # noqa: E402
from pymongo.errors import (BulkWriteError, DuplicateKeyError,  # noqa: E402
                            OperationFailure, WriteError)


class Topology(ServerTest):
    def test_replica_set_uri_and_hello(self):
        hello = self.client.admin.command("isMaster")
        self.assertTrue(hello["ismaster"])
        self.assertIn("setName", hello)
        for key in ("maxBsonObjectSize", "maxMessageSizeBytes", "maxWriteBatchSize",
                    "minWireVersion", "maxWireVersion", "logicalSessionTimeoutMinutes"):
            self.assertIsInstance(hello[key], int, key)
            self.assertNotIsInstance(hello[key], Int64, key)
        self.assertGreaterEqual(hello["maxWireVersion"], 9)
        self.assertLessEqual(hello["minWireVersion"], 6)
        host, port = server_address()
        rs = self.new_client(host="mongodb://%s:%d/?replicaSet=%s" % (host, port,
                                                                    hello["setName"]))
        rs[DB][self.coll.name].insert_one({"_id": "via-replicaSet"})
        self.assertIsNotNone(rs.primary)
        self.assertEqual(self.coll.find_one({"_id": "via-replicaSet"}),
                         {"_id": "via-replicaSet"})


class Replies(ServerTest):
    """Reply shapes and integer types that drivers (libmongoc above all) depend on."""

    def assertInt32(self, value, what):
        self.assertIsInstance(value, int, what)
        self.assertNotIsInstance(value, (bool, Int64), what)

    def test_code_names(self):
        # The names of r6.0 src/mongo/base/error_codes.yml (6.0 calls 64 WriteConcernFailed),
        # through failCommand, which answers with the code it is given as mongod does.
        names = {95: "NotSecondary", 125: "CommandFailed", 175: "QueryPlanKilled",
                 54: "NotSingleValueField", 56: "EmptyFieldName", 241: "ConversionFailure",
                 64: "WriteConcernFailed"}
        for code, name in names.items():
            self.failpoint("failCommand", {"times": 1}, failCommands=["ping"], errorCode=code)
            with self.assertRaises(OperationFailure) as ctx:
                self.db.command("ping")
            self.assertEqual((ctx.exception.code, ctx.exception.details["codeName"]),
                             (code, name))

    def test_error_reply_shape(self):
        with self.assertRaises(OperationFailure) as ctx:
            self.db.command("noSuchCommandAtAll")
        d = ctx.exception.details
        self.assertEqual((d["ok"], d["code"], d["codeName"]), (0.0, 59, "CommandNotFound"))
        self.assertInt32(d["code"], "code")
        self.assertIsInstance(d["errmsg"], str)
        self.assertIsInstance(d["operationTime"], bson.timestamp.Timestamp)
        self.assertIsInstance(d["$clusterTime"]["clusterTime"], bson.timestamp.Timestamp)
        with self.assertRaises(OperationFailure) as ctx:
            self.db.command("drop", "no_such_collection_here")
        self.assertEqual(ctx.exception.details["codeName"], "NamespaceNotFound")

    def test_write_reply_types(self):
        r = self.db.command("insert", self.coll.name, documents=[{"_id": 1}, {"_id": 2}])
        self.assertInt32(r["n"], "insert n")
        r = self.db.command("update", self.coll.name, updates=[
            {"q": {"_id": 1}, "u": {"$set": {"a": 1}}},
            {"q": {"_id": 3}, "u": {"$set": {"a": 3}}, "upsert": True}])
        self.assertEqual((r["n"], r["nModified"]), (2, 1))
        self.assertInt32(r["n"], "update n")
        self.assertInt32(r["nModified"], "nModified")
        self.assertEqual([(u["index"], u["_id"]) for u in r["upserted"]], [(1, 3)])
        self.assertInt32(r["upserted"][0]["index"], "upserted.index")
        r = self.db.command("delete", self.coll.name, deletes=[{"q": {}, "limit": 0}])
        self.assertEqual(r["n"], 3)
        self.assertInt32(r["n"], "delete n")

    def test_find_batches_and_cursor_ids(self):
        self.coll.insert_many([{"_id": i} for i in range(150)])
        r = self.db.command("find", self.coll.name, sort={"_id": 1})
        cursor = r["cursor"]
        self.assertEqual(len(cursor["firstBatch"]), 101)
        self.assertIsInstance(cursor["id"], Int64)
        self.assertEqual(cursor["ns"], "%s.%s" % (DB, self.coll.name))
        r = self.db.command("getMore", cursor["id"], collection=self.coll.name)
        self.assertEqual([d["_id"] for d in r["cursor"]["nextBatch"]], list(range(101, 150)))
        self.assertEqual(r["cursor"]["id"], 0)
        self.assertIsInstance(r["cursor"]["id"], Int64)
        with self.assertRaises(OperationFailure) as ctx:
            self.db.command("getMore", cursor["id"], collection=self.coll.name)
        self.assertEqual(ctx.exception.code, 43)
        r = self.db.command("listCollections", filter={"name": self.coll.name})
        self.assertEqual(r["cursor"]["ns"], "%s.$cmd.listCollections" % DB)
        self.assertEqual([c["name"] for c in r["cursor"]["firstBatch"]], [self.coll.name])

    def test_sessions_and_concerns(self):
        from pymongo.read_concern import ReadConcern
        from pymongo.write_concern import WriteConcern
        coll = self.coll.with_options(write_concern=WriteConcern(w="majority", j=True,
                                                                 wtimeout=5000),
                                      read_concern=ReadConcern("majority"))
        with self.client.start_session(causal_consistency=True) as s:
            coll.insert_one({"_id": 1}, session=s)  # then reads carry afterClusterTime
            self.assertEqual(coll.find_one({"_id": 1}, session=s), {"_id": 1})
            self.assertEqual(coll.count_documents({}, session=s), 1)
            self.assertIsNotNone(s.cluster_time)
        r = self.db.command("find", self.coll.name, readConcern={"level": "local"})
        self.assertEqual(r["cursor"]["firstBatch"], [{"_id": 1}])
        self.client.admin.command("endSessions", [])

    def test_new_fields_in_lexicographic_order(self):
        self.coll.insert_one({"_id": 1, "m": 1})
        self.coll.update_one({"_id": 1}, {"$set": {"z": 1, "b": 1, "a.y": 1, "a.c": 1}})
        doc = self.coll.find_one({"_id": 1})
        self.assertEqual(list(doc), ["_id", "m", "a", "b", "z"])
        self.assertEqual(list(doc["a"]), ["c", "y"])
        res = self.coll.update_one({"k": 1}, {"$set": {"v": 1}}, upsert=True)
        self.assertEqual(list(self.coll.find_one({"_id": res.upserted_id})), ["_id", "k", "v"])

    def test_change_stream_getmore_waits_for_max_await(self):
        with self.coll.watch(max_await_time_ms=600) as stream:
            t0 = time.monotonic()
            self.assertIsNone(stream.try_next())
            took = time.monotonic() - t0
        self.assertGreater(took, 0.45, "getMore returned before maxAwaitTimeMS")
        self.assertLess(took, 2.0, "getMore waited far beyond maxAwaitTimeMS")


class ArrayUpdates(ServerTest):
    def seed(self, **fields):
        doc = {"_id": 1}
        doc.update(fields)
        self.coll.insert_one(doc)

    def get(self):
        return self.coll.find_one({"_id": 1}, {"_id": 0})

    def test_push_each_position_sort_slice(self):
        self.seed(events=[{"n": 1}, {"n": 3}])
        self.coll.update_one({"_id": 1}, {"$push": {"events": {"$each": [{"n": 2}, {"n": 0}],
                                                              "$position": 1}}})
        self.assertEqual(self.get()["events"], [{"n": 1}, {"n": 2}, {"n": 0}, {"n": 3}])
        self.coll.update_one({"_id": 1}, {"$push": {"events": {
            "$each": [{"n": 5}], "$sort": {"n": 1}, "$slice": -3}}})
        self.assertEqual(self.get()["events"], [{"n": 2}, {"n": 3}, {"n": 5}])
        self.coll.update_one({"_id": 1}, {"$push": {"events": {
            "$each": [{"n": 4}], "$sort": {"n": -1}, "$slice": 2}}})
        self.assertEqual(self.get()["events"], [{"n": 5}, {"n": 4}])
        self.coll.update_one({"_id": 1}, {"$push": {"events": {"$each": [{"n": 9}],
                                                              "$position": -1}}})
        self.assertEqual(self.get()["events"], [{"n": 5}, {"n": 9}, {"n": 4}])
        self.coll.update_one({"_id": 1}, {"$push": {"events": {"$each": [], "$slice": 0}}})
        self.assertEqual(self.get()["events"], [])

    def test_push_missing_and_non_array(self):
        self.seed(x=1)
        self.coll.update_one({"_id": 1}, {"$push": {"a.b": {"k": 1}}})
        self.assertEqual(self.get(), {"x": 1, "a": {"b": [{"k": 1}]}})
        with self.assertRaises(WriteError) as ctx:
            self.coll.update_one({"_id": 1}, {"$push": {"x": 2}})
        self.assertCode(ctx, 2)

    def test_pull_conditions_on_documents(self):
        self.seed(events=[{"n": 1, "t": "a"}, {"n": 2, "t": "b"}, {"n": 3, "t": "a"},
                          {"n": 4, "t": "c", "extra": True}])
        self.coll.update_one({"_id": 1}, {"$pull": {"events": {"t": "a"}}})
        self.assertEqual(self.get()["events"], [{"n": 2, "t": "b"},
                                                {"n": 4, "t": "c", "extra": True}])
        self.coll.update_one({"_id": 1}, {"$pull": {"events": {"n": {"$gte": 4}}}})
        self.assertEqual(self.get()["events"], [{"n": 2, "t": "b"}])
        res = self.coll.update_one({"_id": 1}, {"$pull": {"events": {"n": 99}}})
        self.assertEqual((res.matched_count, res.modified_count), (1, 0))

    def test_pull_scalars_and_pull_all_pop_add_to_set(self):
        self.seed(tags=[1, 2, 3, 4, 5, 3])
        self.coll.update_one({"_id": 1}, {"$pull": {"tags": {"$in": [2, 3]}}})
        self.assertEqual(self.get()["tags"], [1, 4, 5])
        self.coll.update_one({"_id": 1}, {"$pull": {"tags": {"$gt": 4}}})
        self.assertEqual(self.get()["tags"], [1, 4])
        self.coll.update_one({"_id": 1}, {"$addToSet": {"tags": {"$each": [4, 6, 6]}}})
        self.assertEqual(self.get()["tags"], [1, 4, 6])
        self.coll.update_one({"_id": 1}, {"$pullAll": {"tags": [1, 6]}})
        self.assertEqual(self.get()["tags"], [4])
        self.coll.update_one({"_id": 1}, {"$push": {"tags": {"$each": [7, 8]}}})
        self.coll.update_one({"_id": 1}, {"$pop": {"tags": -1}})
        self.assertEqual(self.get()["tags"], [7, 8])
        # $addToSet compares documents by BSON equality: field order matters
        self.coll.update_one({"_id": 1}, {"$set": {"docs": [SON([("a", 1), ("b", 2)])]}})
        self.coll.update_one({"_id": 1}, {"$addToSet": {"docs": SON([("b", 2), ("a", 1)])}})
        self.coll.update_one({"_id": 1}, {"$addToSet": {"docs": SON([("a", 1), ("b", 2)])}})
        self.assertEqual(len(self.get()["docs"]), 2)

    def test_positional_operators(self):
        self.seed(events=[{"n": 1, "t": "a"}, {"n": 2, "t": "b"}, {"n": 3, "t": "a"}])
        self.coll.update_one({"_id": 1, "events.n": 2}, {"$set": {"events.$.t": "x"}})
        self.assertEqual(self.get()["events"][1], {"n": 2, "t": "x"})
        self.coll.update_one({"_id": 1}, {"$inc": {"events.$[].n": 10}})
        self.assertEqual([e["n"] for e in self.get()["events"]], [11, 12, 13])
        self.coll.update_one({"_id": 1}, {"$set": {"events.$[e].seen": True}},
                             array_filters=[{"e.t": "a"}])
        self.assertEqual([e.get("seen") for e in self.get()["events"]], [True, None, True])
        self.coll.update_one({"_id": 1}, {"$set": {"events.1.n": 0}})
        self.assertEqual(self.get()["events"][1]["n"], 0)
        with self.assertRaises(WriteError) as ctx:  # identifier never used in the update
            self.coll.update_one({"_id": 1}, {"$set": {"events.0.n": 5}},
                                 array_filters=[{"unused.t": "a"}])
        self.assertCode(ctx, 9)
        with self.assertRaises(WriteError) as ctx:  # '$' without an array in the query
            self.coll.update_one({"_id": 1}, {"$set": {"events.$.n": 5}})
        self.assertCode(ctx, 2)

    def test_update_error_codes(self):
        self.seed(a=1, s="text")
        cases = [({"$set": {"_id": 2}}, 66), ({"$set": {"a": 1}, "$inc": {"a": 1}}, 40),
                 ({"$foo": {"a": 1}}, 9), ({"$set": {"a.b": 1}}, 28), ({"$inc": {"s": 1}}, 14)]
        for update, code in cases:
            with self.subTest(update=update):
                with self.assertRaises(WriteError) as ctx:
                    self.coll.update_one({"_id": 1}, update)
                self.assertCode(ctx, code)
        self.assertEqual(self.get(), {"a": 1, "s": "text"})

    def test_pipeline_updates(self):
        self.seed(a=1, arr=[1, 2, 3])
        r = self.db.command("update", self.coll.name, updates=[{"q": {"_id": 1}, "u": []}])
        self.assertEqual((r["n"], r["nModified"]), (1, 0))  # an empty pipeline changes nothing
        self.assertEqual(self.get(), {"a": 1, "arr": [1, 2, 3]})
        self.coll.update_one({"_id": 1}, [{"$set": {"b": "$a"}}, {"$unset": "arr"}])
        self.assertEqual(self.get(), {"a": 1, "b": 1})

    def test_inc_overflow_and_upsert_seed(self):
        self.seed(i=2**31 - 1)
        self.coll.update_one({"_id": 1}, {"$inc": {"i": 1}})
        raw = self.coll.find_one({"_id": 1})["i"]
        self.assertEqual(raw, 2**31)
        self.assertIsInstance(raw, Int64)
        res = self.coll.update_one({"k": 5, "$and": [{"m": "x"}], "q": {"$gt": 1}},
                                   {"$set": {"z": 1}, "$setOnInsert": {"created": True}},
                                   upsert=True)
        self.assertIsNotNone(res.upserted_id)
        doc = self.coll.find_one({"_id": res.upserted_id}, {"_id": 0})
        self.assertEqual(doc, {"k": 5, "m": "x", "z": 1, "created": True})


class Queries(ServerTest):
    def setUp(self):
        super().setUp()
        self.coll.insert_many([
            {"_id": 1, "events": [{"n": 1, "t": "a"}, {"n": 5, "t": "b"}], "tags": ["x", "y"]},
            {"_id": 2, "events": [{"n": 5, "t": "a"}], "tags": [], "v": None},
            {"_id": 3, "events": [], "tags": ["x"], "v": 0},
            {"_id": 4, "tags": [["x", "y"]], "v": {"w": 1}},
        ])

    def ids(self, flt):
        return [d["_id"] for d in self.coll.find(flt, {"_id": 1}).sort("_id", 1)]

    def test_elem_match_versus_dotted(self):
        self.assertEqual(self.ids({"events": {"$elemMatch": {"n": {"$gt": 1}, "t": "a"}}}), [2])
        self.assertEqual(self.ids({"events.n": {"$gt": 1}, "events.t": "a"}), [1, 2])
        self.assertEqual(self.ids({"_id": {"$lt": 4}, "tags": {"$elemMatch": {"$eq": "y"}}}),
                         [1])
        self.assertEqual(self.ids({"events.0.n": 1}), [1])
        self.assertEqual(self.ids({"events.n": 5}), [1, 2])

    def test_size_exists_null(self):
        self.assertEqual(self.ids({"tags": {"$size": 2}}), [1])
        self.assertEqual(self.ids({"tags": {"$size": 0}}), [2])
        self.assertEqual(self.ids({"v": {"$exists": True}}), [2, 3, 4])
        self.assertEqual(self.ids({"v": {"$exists": False}}), [1])
        self.assertEqual(self.ids({"v": None}), [1, 2])
        self.assertEqual(self.ids({"v": {"$ne": None}}), [3, 4])
        self.assertEqual(self.ids({"events": {"$exists": True, "$size": 0}}), [3])

    def test_logical_operators(self):
        self.assertEqual(self.ids({"$or": [{"v": 0}, {"tags": {"$size": 2}}]}), [1, 3])
        self.assertEqual(self.ids({"$nor": [{"v": 0}, {"tags": "x"}]}), [2, 4])
        self.assertEqual(self.ids({"v": {"$not": {"$gt": -1}}}), [1, 2, 4])
        self.assertEqual(self.ids({"$and": [{"tags": "x"}, {"v": {"$exists": True}}]}), [3])
        self.assertEqual(self.ids({"v.w": 1}), [4])
        self.assertEqual(self.ids({"v": {"w": 1}}), [4])
        self.assertEqual(self.ids({"events": {"n": 5, "t": "a"}}), [2])
        self.assertEqual(self.ids({"events": {"t": "a", "n": 5}}), [])  # field order counts

    def test_sort_on_arrays_and_projection(self):
        self.coll.insert_many([{"_id": 10, "a": [3, 1], "n": {"x": 1, "y": 2}},
                               {"_id": 11, "a": 2, "n": {"x": 3, "y": 4}},
                               {"_id": 12, "a": [5], "n": {"x": 5}}])
        flt = {"_id": {"$gte": 10}}
        # ascending sorts by each array's smallest element, descending by its largest
        self.assertEqual([d["_id"] for d in self.coll.find(flt).sort("a", 1)], [10, 11, 12])
        self.assertEqual([d["_id"] for d in self.coll.find(flt).sort("a", -1)], [12, 10, 11])
        docs = list(self.coll.find(flt, {"n.x": 1, "_id": 0}).sort("_id", 1))
        self.assertEqual(docs, [{"n": {"x": 1}}, {"n": {"x": 3}}, {"n": {"x": 5}}])
        docs = list(self.coll.find(flt, {"n.x": 0, "a": 0}).sort("_id", 1))
        self.assertEqual(docs, [{"_id": 10, "n": {"y": 2}}, {"_id": 11, "n": {"y": 4}},
                                {"_id": 12, "n": {}}])

    def test_numeric_equality_across_types(self):
        self.coll.insert_one({"_id": 7, "v": 1})
        with self.assertRaises(DuplicateKeyError):
            self.coll.insert_one({"_id": 7.0})
        with self.assertRaises(DuplicateKeyError):
            self.coll.insert_one({"_id": Int64(7)})
        self.assertEqual(self.coll.find_one({"_id": Int64(7)})["v"], 1)
        self.assertEqual(self.coll.find_one({"_id": 7.0})["v"], 1)
        self.assertEqual(self.ids({"v": {"$in": [1.0]}, "_id": 7}), [7])

    def test_distinct_over_arrays(self):
        self.coll.insert_many([{"_id": 20, "a": [{"b": 1}, {"b": 2}]}, {"_id": 21, "a": {"b": 3}},
                               {"_id": 22, "a": {"b": [5, 6]}}, {"_id": 23, "a": [{"b": 1}]}])
        self.assertEqual(sorted(self.coll.distinct("a.b", {"_id": {"$gte": 20}})),
                         [1, 2, 3, 5, 6])
        # arrays are unwound one level: [] adds nothing, [["x", "y"]] adds ["x", "y"]
        self.assertEqual(sorted(map(repr, self.coll.distinct("tags"))),
                         sorted(map(repr, ["x", "y", ["x", "y"]])))

    def test_array_semantics_in_depth(self):
        self.coll.insert_many([
            {"_id": 30, "a": [{"b": 1}, {"c": 2}], "n": [0, 5]},
            {"_id": 31, "a": [{"b": [{"c": 1}]}], "n": [2]},
            {"_id": 32, "a": {"0": 1, "b": 2}, "n": 5},
            {"_id": 33, "a": [{"x": 1}, {"y": 2}], "n": []},
        ])
        flt = {"_id": {"$gte": 30}}

        def ids(q):
            return self.ids(dict(q, **flt))
        self.assertEqual(ids({"a.b": None}), [30, 33])  # an element without b counts as null
        self.assertEqual(ids({"a.b.c": 1}), [31])       # through two levels of arrays
        self.assertEqual(ids({"a.0": 1}), [32])         # "0" names a field of a document
        self.assertEqual(ids({"n": {"$gt": 1, "$lt": 3}}), [30, 31])   # any elements
        self.assertEqual(ids({"n": {"$elemMatch": {"$gt": 1, "$lt": 3}}}), [31])  # one element
        self.assertEqual(ids({"n": {"$gt": 3}}), [30, 32])
        self.assertEqual(ids({"a": {"$all": [{"$elemMatch": {"x": 1}},
                                             {"$elemMatch": {"y": 2}}]}}), [33])
        self.assertEqual(ids({"n": {"$ne": 5}}), [31, 33])
        self.assertEqual(ids({"n": {"$size": 1}}), [31])

    def test_array_equality_and_all(self):
        self.assertEqual(self.ids({"tags": "x"}), [1, 3])
        self.assertEqual(self.ids({"tags": ["x", "y"]}), [1, 4])
        self.assertEqual(self.ids({"tags": {"$all": ["y", "x"]}}), [1])
        self.assertEqual(self.ids({"tags": {"$in": [[], "zz"]}}), [2])
        self.assertEqual(self.ids({"tags": {"$nin": ["x"]}}), [2, 4])

    def test_type_bracketing_and_sort(self):
        self.coll.insert_many([{"_id": 10, "k": 1}, {"_id": 11, "k": 2.5},
                               {"_id": 12, "k": Int64(3)}, {"_id": 13, "k": "1"},
                               {"_id": 14, "k": None}, {"_id": 15, "k": {"a": 1}}])
        self.assertEqual(self.ids({"k": {"$gt": 1}}), [11, 12])
        self.assertEqual(self.ids({"k": {"$lt": "2"}}), [13])
        order = [d["_id"] for d in self.coll.find({"_id": {"$gte": 10}}).sort("k", 1)]
        self.assertEqual(order, [14, 10, 11, 12, 13, 15])


class WriteLimits(ServerTest):
    def test_duplicate_id_and_unique_index(self):
        self.coll.create_index("email", unique=True)
        self.coll.insert_one({"_id": 1, "email": "a@x"})
        with self.assertRaises(DuplicateKeyError) as ctx:
            self.coll.insert_one({"_id": 1, "email": "b@x"})
        self.assertEqual(ctx.exception.details.get("keyValue"), {"_id": 1})
        with self.assertRaises(DuplicateKeyError) as ctx:
            self.coll.insert_one({"_id": 2, "email": "a@x"})
        self.assertEqual(ctx.exception.details.get("keyPattern"), {"email": 1})
        self.assertEqual(ctx.exception.details.get("keyValue"), {"email": "a@x"})
        self.assertIn("E11000 duplicate key error", str(ctx.exception))
        self.coll.insert_one({"_id": 3, "email": "c@x"})
        with self.assertRaises(DuplicateKeyError):
            self.coll.update_one({"_id": 3}, {"$set": {"email": "a@x"}})
        with self.assertRaises(BulkWriteError) as ctx:
            self.coll.insert_many([{"_id": 4, "email": 4}, {"_id": 1, "email": 0},
                                   {"_id": 5, "email": 5}], ordered=True)
        self.assertEqual(ctx.exception.details["nInserted"], 1)
        self.assertCode(ctx, 11000)
        with self.assertRaises(BulkWriteError) as ctx:
            self.coll.insert_many([{"_id": 6, "email": 6}, {"_id": 1, "email": 1},
                                   {"_id": 7, "email": 7}], ordered=False)
        self.assertEqual(ctx.exception.details["nInserted"], 2)
        self.assertEqual(sorted(d["_id"] for d in self.coll.find()), [1, 3, 4, 6, 7])
        # a missing field is indexed as null: only one document may lack it
        self.coll.insert_one({"_id": 8})
        with self.assertRaises(DuplicateKeyError) as ctx:
            self.coll.insert_one({"_id": 9})
        self.assertEqual(ctx.exception.details.get("keyValue"), {"email": None})

    def test_partial_unique_index(self):
        self.coll.create_index("email", unique=True,
                               partialFilterExpression={"active": True})
        self.coll.insert_many([{"_id": 1, "email": "a", "active": False},
                               {"_id": 2, "email": "a", "active": False},
                               {"_id": 3, "email": "a", "active": True}])
        with self.assertRaises(DuplicateKeyError):
            self.coll.insert_one({"_id": 4, "email": "a", "active": True})
        with self.assertRaises(DuplicateKeyError):
            self.coll.update_one({"_id": 1}, {"$set": {"active": True}})
        self.coll.update_one({"_id": 3}, {"$set": {"active": False}})
        self.coll.update_one({"_id": 1}, {"$set": {"active": True}})
        names = [ix["name"] for ix in self.coll.list_indexes()]
        self.assertEqual(sorted(names), ["_id_", "email_1"])

    def test_index_conflicts(self):
        self.coll.insert_many([{"_id": 1, "a": 1}, {"_id": 2, "a": 1}])
        with self.assertRaises(OperationFailure) as ctx:  # existing duplicates
            self.coll.create_index("a", unique=True)
        self.assertEqual(ctx.exception.code, 11000)
        self.coll.create_index("a")
        with self.assertRaises(OperationFailure) as ctx:  # same keys, another name
            self.coll.create_index("a", name="other_name")
        self.assertEqual(ctx.exception.code, 85)
        with self.assertRaises(OperationFailure) as ctx:  # same name, other keys
            self.coll.create_index("b", name="a_1")
        self.assertEqual(ctx.exception.code, 86)
        self.assertEqual(self.coll.create_index("a"), "a_1")  # identical: a no-op
        self.coll.drop_index("a_1")
        self.assertEqual([ix["name"] for ix in self.coll.list_indexes()], ["_id_"])

    def test_large_results_are_split_into_batches(self):
        four_mb = "x" * (4 * 1024 * 1024)
        for i in range(6):
            self.coll.insert_one({"_id": i, "s": four_mb})
        stream = self.coll.watch()
        self.addCleanup(stream.close)
        r = self.db.command("find", self.coll.name)
        first = r["cursor"]["firstBatch"]
        self.assertLessEqual(len(bson.encode(r)), MiB16 + 16 * 1024)
        self.assertLess(len(first), 6, "a 24 MB first batch: replies must stay under 16 MiB")
        self.assertEqual(sum(1 for _ in self.coll.find({}, {"_id": 1})), 6)
        self.assertEqual(sorted(d["_id"] for d in self.coll.find()), list(range(6)))
        self.db.command("killCursors", self.coll.name, cursors=[r["cursor"]["id"]])
        # change events of big documents: a getMore batch stays under 16 MiB too
        self.coll.update_many({}, {"$set": {"t": 1}})
        agg = self.db.command("aggregate", self.coll.name, pipeline=[
            {"$changeStream": {"fullDocument": "updateLookup",
                               "resumeAfter": stream.resume_token}}], cursor={})
        batches = [agg["cursor"]["firstBatch"]]
        cid = agg["cursor"]["id"]
        while sum(len(b) for b in batches) < 6:
            more = self.db.command("getMore", cid, collection=self.coll.name, maxTimeMS=500)
            self.assertLessEqual(len(bson.encode(more)), MiB16 + 16 * 1024)
            batches.append(more["cursor"]["nextBatch"])
            self.assertLess(len(batches), 20)
        self.db.command("killCursors", self.coll.name, cursors=[cid])
        events = [e for b in batches for e in b]
        self.assertEqual([e["documentKey"]["_id"] for e in events], list(range(6)))
        self.assertTrue(all(len(e["fullDocument"]["s"]) == len(four_mb) for e in events))

    def test_insert_over_16mib_is_code_2(self):
        # pymongo refuses such an insert_one itself; the insert command below stays under
        # its command limit (16 MiB + 16 KiB) so the server has to judge the document.
        big = {"_id": 1, "s": "x" * (MiB16 + 100 - 30)}
        self.assertGreater(len(bson.encode(big)), MiB16)
        res = self.db.command("insert", self.coll.name, documents=[big])
        self.assertEqual(res["n"], 0)
        self.assertEqual([e["code"] for e in res["writeErrors"]], [2])
        self.assertEqual(self.coll.count_documents({}), 0)

    def test_update_growing_past_16mib_is_17419(self):
        self.coll.insert_one({"_id": 1, "a": "x" * (10 * 1024 * 1024)})
        with self.assertRaises(WriteError) as ctx:
            self.coll.update_one({"_id": 1}, {"$set": {"b": "y" * (7 * 1024 * 1024)}})
        self.assertCode(ctx, 17419)
        self.assertNotIn("b", self.coll.find_one({"_id": 1}, {"a": 0}))


# --------------------------------------------------------------------------------------
from test_server_streams import (ChangeStreamShapes, HistoryLoss, OutboxPatterns,  # noqa: E402
                                 Resume)
from test_server_faults import (BadInput, Concurrency, FailPoints,  # noqa: E402
                                RetryableWrites)
from test_server_expressions import RelayGroupExpressions  # noqa: E402
import test_server_compat  # noqa: E402
from test_server_compat import *  # noqa: E402,F401,F403 (so Class.test names resolve)
from test_server_txn import TransactionRules, Transactions  # noqa: E402

ALL = [Topology, Replies, ArrayUpdates, Queries, WriteLimits, ChangeStreamShapes, Resume,
       OutboxPatterns, HistoryLoss, FailPoints, RetryableWrites, Transactions,
       TransactionRules, Concurrency, BadInput, RelayGroupExpressions] + test_server_compat.COMPAT


def main(argv):
    if not URI:
        print("server-pymongo: SKIP: OUTBOX_TEST_MONGODB_URI is not set "
              "(run under tests/fixtures/with-servers)")
        print("server-pymongo: 0 passed, 0 failed, 0 skipped")
        return 77
    loader = unittest.TestLoader()
    module = sys.modules[__name__]
    suite = unittest.TestSuite()
    if argv:
        for name in argv:
            suite.addTests(loader.loadTestsFromName(name, module))
    else:
        for cls in ALL:
            suite.addTests(loader.loadTestsFromTestCase(cls))
    result = unittest.TextTestRunner(stream=sys.stdout, verbosity=2).run(suite)
    failed_ids = {getattr(t, "test_case", t).id() for t, _ in result.failures + result.errors}
    failed = len(failed_ids) + len(result.unexpectedSuccesses)
    skipped = len(result.skipped)
    passed = result.testsRun - failed - skipped
    for test, reason in result.skipped:
        print("SKIP %s -- %s" % (test.id(), reason))
    print("server-pymongo: %d passed, %d failed, %d skipped" % (passed, failed, skipped))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
