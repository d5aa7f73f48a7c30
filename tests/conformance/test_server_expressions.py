"""pymongo tests of what outbox-relay groups ask of the server (see test_server.py).

$toHashedIndexKey against hashes MongoDB publishes (sources in tests/mongod/engine/test-hash.c),
a lease taken with a pipeline find_one_and_update judged by the server's $$NOW, a change stream
filtered by a hash range, and date arithmetic errors. All of it is MongoDB 6.0 behaviour.
"""
import datetime
import time

from servertest import ServerTest, next_change
from bson.binary import Binary
from bson.decimal128 import Decimal128
from bson.int64 import Int64
from bson.objectid import ObjectId
from pymongo import ReturnDocument
from pymongo.errors import OperationFailure

PUBLISHED = [
    (ObjectId("010203040506070809101112"), -5588663249627035708),
    (Binary(bytes(range(16)), 4), 6084661258071355978),
    ("abc", 8478485326885698097),
    ("string to hash", 763543691661428748),
    (42, -944302157085130861),
    (Int64(42), -944302157085130861),
    (42.123, -944302157085130861),
    ({"a": "abc", "b": Int64(123)}, 4771603801758380216),
    (None, 2338878944348059895),
]


class RelayGroupExpressions(ServerTest):
    def hashes(self, values):
        self.coll.insert_many([{"_id": i, "v": v} for i, v in enumerate(values)])
        out = self.coll.aggregate([{"$sort": {"_id": 1}},
                                   {"$project": {"h": {"$toHashedIndexKey": "$v"}}}])
        return [d["h"] for d in out]

    def test_published_hashes(self):
        got = self.hashes([v for v, _ in PUBLISHED])
        self.assertEqual(got, [h for _, h in PUBLISHED])
        self.assertTrue(all(isinstance(h, Int64) for h in got))

    def test_decimal_and_missing(self):
        self.coll.insert_one({"_id": 0, "d": Decimal128("42")})
        doc = next(self.coll.aggregate([{"$project": {
            "d": {"$toHashedIndexKey": "$d"}, "m": {"$toHashedIndexKey": "$nope"}}}]))
        self.assertEqual(doc["d"], -944302157085130861)
        self.assertEqual(doc["m"], 2338878944348059895)

    def acquire(self, owner, ttl_ms):
        return self.coll.find_one_and_update(
            {"_id": "p1", "$or": [{"owner": None},
                                  {"$expr": {"$lt": ["$expiresAt", "$$NOW"]}}]},
            [{"$set": {"owner": owner, "epoch": {"$add": [{"$ifNull": ["$epoch", 0]}, 1]},
                       "expiresAt": {"$add": ["$$NOW", ttl_ms]}}}],
            return_document=ReturnDocument.AFTER)

    def test_lease_by_server_clock(self):
        self.coll.insert_one({"_id": "p1"})
        first = self.acquire("a", 1000)
        self.assertEqual((first["owner"], first["epoch"]), ("a", 1))
        self.assertIsInstance(first["expiresAt"], datetime.datetime)
        self.assertIsNone(self.acquire("b", 1000))
        deadline, second = time.monotonic() + 30, None
        while second is None and time.monotonic() < deadline:
            second = self.acquire("b", 1000)
            time.sleep(0.05)
        self.assertIsNotNone(second, "an expired lease is taken")
        self.assertEqual((second["owner"], second["epoch"]), ("b", 2))
        self.assertGreater(second["expiresAt"], first["expiresAt"])

    def test_watch_hash_range(self):
        low, high = Int64(-(1 << 62)), Int64(1 << 62)
        key = {"$toHashedIndexKey": "$documentKey._id"}
        self.coll.insert_one({"_id": "setup"})
        ids = ["abc", 42, ObjectId("010203040506070809101112"), Int64(1), -1]
        with self.coll.watch([{"$match": {"$expr": {"$and": [
                {"$gte": [key, low]}, {"$lt": [key, high]}]}}}], max_await_time_ms=200) as s:
            self.coll.insert_many([{"_id": i} for i in ids])
            self.coll.insert_one({"_id": "string to hash"})  # in range: the last event
            hashes = {d["_id"]: d["h"] for d in self.coll.aggregate(
                [{"$match": {"_id": {"$in": ids}}},
                 {"$project": {"h": {"$toHashedIndexKey": "$_id"}}}])}
            want = [i for i in ids if low <= hashes[i] < high]
            seen = []
            while True:
                ev = next_change(s)["documentKey"]["_id"]
                if ev == "string to hash":
                    break
                seen.append(ev)
        self.assertEqual(seen, want)
        self.assertEqual(want, [42, -1])  # by the published hashes of all five

    def test_date_arithmetic_errors(self):
        self.coll.insert_one({"_id": 1, "t": datetime.datetime(2024, 1, 1)})
        for expr, code in [({"$add": ["$t", "$t"]}, 16612),
                           ({"$subtract": [1, "$t"]}, 14),
                           ({"$add": ["$t", "x"]}, 14)]:
            with self.assertRaises(OperationFailure) as ctx:
                list(self.coll.aggregate([{"$project": {"r": expr}}]))
            self.assertCode(ctx, code)
        doc = next(self.coll.aggregate([{"$project": {
            "later": {"$add": ["$t", 1500]}, "ms": {"$subtract": [{"$add": ["$t", 1500]}, "$t"]}}}]))
        self.assertEqual(doc["later"], datetime.datetime(2024, 1, 1, 0, 0, 1, 500000))
        self.assertEqual(doc["ms"], 1500)
        self.assertIsInstance(doc["ms"], Int64)
