"""Change streams seen through pymongo's watch(): shapes, resuming, history loss."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from servertest import DB, ServerTest, bson, next_change, no_change  # noqa: E402
from pymongo.errors import OperationFailure  # noqa: E402


class ChangeStreamShapes(ServerTest):
    def test_update_descriptions(self):
        self.coll.insert_one({"_id": 1, "events": [{"n": 1}], "tags": [], "x": 1,
                              "a": {"b": 1}})
        stream = self.coll.watch()
        self.addCleanup(stream.close)
        steps = [
            ({"$push": {"events": {"n": 2}}}, {"events.1": {"n": 2}}, []),
            ({"$push": {"events": {"$each": [{"n": 3}, {"n": 4}]}}},
             {"events.2": {"n": 3}, "events.3": {"n": 4}}, []),
            ({"$push": {"tags": "t1"}}, {"tags": ["t1"]}, []),
            ({"$push": {"fresh": "z"}}, {"fresh": ["z"]}, []),
            ({"$push": {"events": {"$each": [{"n": 0}], "$position": 0}}},
             {"events": [{"n": 0}, {"n": 1}, {"n": 2}, {"n": 3}, {"n": 4}]}, []),
            ({"$push": {"events": {"$each": [{"n": 5}], "$slice": -3}}},
             {"events": [{"n": 3}, {"n": 4}, {"n": 5}]}, []),
            ({"$pull": {"events": {"n": {"$gte": 5}}}}, {"events": [{"n": 3}, {"n": 4}]}, []),
            ({"$addToSet": {"tags": "t2"}}, {"tags": ["t1", "t2"]}, []),
            ({"$pop": {"tags": 1}}, {"tags": ["t1"]}, []),
            ({"$unset": {"x": ""}}, {}, ["x"]),
            ({"$set": {"a.b": 2}}, {"a.b": 2}, []),
            ({"$set": {"p.q.r": 1}}, {"p": {"q": {"r": 1}}}, []),
            ({"$inc": {"y": 1}}, {"y": 1}, []),
            ({"$set": {"events.0.n": 30}}, {"events.0.n": 30}, []),
        ]
        for update, fields, removed in steps:
            with self.subTest(update=update):
                self.coll.update_one({"_id": 1}, update)
                ev = next_change(stream)
                self.assertEqual(ev["operationType"], "update")
                self.assertEqual(ev["documentKey"], {"_id": 1})
                self.assertEqual(ev["ns"], {"db": DB, "coll": self.coll.name})
                self.assertEqual(ev["updateDescription"], {
                    "updatedFields": fields, "removedFields": removed, "truncatedArrays": []})
        # no-op updates emit nothing: the next event is the marker insert
        res = self.coll.update_one({"_id": 1}, {"$set": {"a.b": 2}})
        self.assertEqual(res.modified_count, 0)
        self.coll.update_one({"_id": 1}, {"$set": {}})  # a no-op since MongoDB 5.0
        self.coll.update_many({"_id": {"$gt": 100}}, {"$set": {"q": 1}})
        self.coll.insert_one({"_id": "marker"})
        ev = next_change(stream)
        self.assertEqual((ev["operationType"], ev["documentKey"]), ("insert", {"_id": "marker"}))

    def test_event_shapes_and_update_lookup(self):
        stream = self.coll.watch(full_document="updateLookup")
        self.addCleanup(stream.close)
        self.coll.insert_one({"_id": 1, "v": 1})
        self.coll.update_one({"_id": 1}, {"$set": {"v": 2}})
        self.coll.replace_one({"_id": 1}, {"v": 3})
        ins, upd, rep = next_change(stream), next_change(stream), next_change(stream)
        self.assertEqual(list(ins), ["_id", "operationType", "clusterTime", "wallTime",
                                     "fullDocument", "ns", "documentKey"])
        self.assertEqual(ins["fullDocument"], {"_id": 1, "v": 1})
        self.assertIsInstance(ins["clusterTime"], bson.timestamp.Timestamp)
        self.assertEqual(upd["fullDocument"], {"_id": 1, "v": 3})  # looked up later
        self.assertEqual(rep["operationType"], "replace")
        self.assertEqual(rep["fullDocument"], {"_id": 1, "v": 3})
        # an update whose document is gone when looked up: fullDocument null
        self.coll.update_one({"_id": 1}, {"$set": {"v": 4}})
        self.coll.delete_one({"_id": 1})
        upd2, dele = next_change(stream), next_change(stream)
        self.assertIsNone(upd2["fullDocument"])
        self.assertEqual(list(dele), ["_id", "operationType", "clusterTime", "wallTime",
                                      "ns", "documentKey"])
        # one event per document, each with its own clusterTime; upsert -> insert
        self.coll.insert_many([{"_id": 2, "g": 1}, {"_id": 3, "g": 1}])
        self.coll.update_many({"g": 1}, {"$set": {"g": 2}})
        self.coll.update_one({"_id": 4}, {"$set": {"g": 3}}, upsert=True)
        evs = [next_change(stream) for _ in range(5)]
        self.assertEqual([e["operationType"] for e in evs],
                         ["insert", "insert", "update", "update", "insert"])
        times = [e["clusterTime"] for e in evs[2:4]]
        self.assertNotEqual(times[0], times[1])
        self.assertEqual(evs[4]["fullDocument"], {"_id": 4, "g": 3})

    def test_database_and_cluster_streams(self):
        other = self.db["other_" + self.coll.name]
        other.drop()
        dbs = self.db.watch()
        cls = self.client.watch([{"$match": {"ns.db": DB}}])
        self.addCleanup(dbs.close)
        self.addCleanup(cls.close)
        self.coll.insert_one({"_id": 1})
        other.insert_one({"_id": 2})
        self.client["outbox_server_tests_other"]["c"].insert_one({"_id": 3})
        self.assertEqual([next_change(dbs)["ns"]["coll"] for _ in range(2)],
                         [self.coll.name, other.name])
        self.assertEqual([next_change(cls)["documentKey"]["_id"] for _ in range(2)], [1, 2])
        self.client.drop_database("outbox_server_tests_other")


class Resume(ServerTest):
    def test_resume_after_token_and_order(self):
        stream = self.coll.watch()
        self.coll.insert_many([{"_id": i} for i in range(1, 6)])
        evs = [next_change(stream) for _ in range(5)]
        stream.close()
        datas = [e["_id"]["_data"] for e in evs]
        self.assertEqual(datas, sorted(datas), "resume tokens must sort in stream order")
        self.assertEqual(len(set(datas)), 5)
        with self.coll.watch(resume_after=evs[1]["_id"]) as again:
            self.assertEqual([next_change(again)["documentKey"]["_id"] for _ in range(3)],
                             [3, 4, 5])

    def test_post_batch_resume_token(self):
        with self.coll.watch(max_await_time_ms=200) as stream:
            self.assertIsNone(stream.try_next())
            self.assertIsNotNone(stream.resume_token)
            self.coll.insert_one({"_id": 1})
            ev = next_change(stream)
            self.assertEqual(stream.resume_token, ev["_id"])
            first = stream.resume_token
            self.assertIsNone(stream.try_next())
            self.assertGreaterEqual(stream.resume_token["_data"], first["_data"])

    def test_start_at_operation_time(self):
        self.coll.insert_one({"_id": 0})
        with self.client.start_session() as s:
            self.coll.insert_one({"_id": 1}, session=s)
            t = s.operation_time
        self.coll.insert_one({"_id": 2})
        with self.coll.watch(start_at_operation_time=t) as stream:
            self.assertEqual([next_change(stream)["documentKey"]["_id"] for _ in range(2)],
                             [1, 2])

    def test_invalidate_start_after_and_260(self):
        self.coll.insert_one({"_id": 0})
        stream = self.coll.watch()
        self.coll.drop()
        drop, inv = next_change(stream), next_change(stream)
        self.assertEqual((drop["operationType"], inv["operationType"]), ("drop", "invalidate"))
        self.assertFalse(stream.alive)
        with self.assertRaises(OperationFailure) as ctx:
            self.coll.watch(resume_after=inv["_id"]).try_next()
        self.assertCode(ctx, 260)
        with self.coll.watch(start_after=inv["_id"]) as again:
            self.coll.insert_one({"_id": "new"})
            ev = next_change(again)
            self.assertEqual((ev["operationType"], ev["documentKey"]), ("insert", {"_id": "new"}))

    def _watch_through_fault(self, setup_fault):
        stream = self.coll.watch(batch_size=2, max_await_time_ms=300)
        self.addCleanup(stream.close)
        self.coll.insert_many([{"_id": i} for i in range(1, 4)])
        seen = [next_change(stream)["documentKey"]["_id"] for _ in range(3)]
        setup_fault()
        self.coll.insert_many([{"_id": i} for i in range(4, 9)])
        while len(seen) < 8:
            seen.append(next_change(stream, timeout=15)["documentKey"]["_id"])
        self.assertIsNone(no_change(stream, 0.8))
        self.assertEqual(seen, list(range(1, 9)), "events lost or repeated")

    def test_resume_after_closed_connection(self):
        self._watch_through_fault(lambda: self.failpoint(
            "failCommand", {"times": 1}, failCommands=["getMore"], closeConnection=True))

    def test_resume_after_two_closed_connections(self):
        self._watch_through_fault(lambda: self.failpoint(
            "failCommand", {"times": 2}, failCommands=["getMore"], closeConnection=True))

    def test_resume_after_resumable_getmore_error(self):
        def fault():
            self.failpoint("failGetMoreAfterCursorCheckout", {"times": 1}, errorCode=6)
        self._watch_through_fault(fault)

    def test_resumable_error_label_and_non_resumable_error(self):
        stream = self.coll.watch(max_await_time_ms=200)
        self.addCleanup(stream.close)
        self.failpoint("failCommand", {"times": 1}, failCommands=["getMore"], errorCode=89)
        stream.try_next()  # resumed once: no error reaches the application
        self.failpoint("failCommand", {"times": 1}, failCommands=["getMore"], errorCode=216)
        with self.assertRaises(OperationFailure) as ctx:
            next_change(stream, timeout=3)
        self.assertCode(ctx, 216)
        self.assertFalse(ctx.exception.has_error_label("ResumableChangeStreamError"))


class HistoryLoss(ServerTest):
    def bound(self):
        if os.environ.get("OUTBOX_TEST_HISTORY_BOUND"):
            return int(os.environ["OUTBOX_TEST_HISTORY_BOUND"])
        if os.environ.get("OUTBOX_TEST_MONGOD_PID") and \
                os.environ.get("OUTBOX_TEST_MONGOD_OPLOG_SIZE"):
            return int(os.environ["OUTBOX_TEST_MONGOD_OPLOG_SIZE"])
        self.skipTest("history bound of this server unknown: runs in meson test "
                      "server-pymongo-history-loss (test-mongod --oplog-size 20), or set "
                      "OUTBOX_TEST_HISTORY_BOUND=N for a server that forgets after N writes")

    def test_resume_after_history_loss_is_286(self):
        bound = self.bound()
        with self.client.start_session() as s:
            self.coll.insert_one({"_id": "first"}, session=s)
            t0 = s.operation_time
        stream = self.coll.watch(start_at_operation_time=t0)
        first = next_change(stream)
        stream.close()
        self.coll.insert_many([{"_id": i} for i in range(3 * bound)])
        for kwargs in ({"resume_after": first["_id"]}, {"start_after": first["_id"]},
                       {"start_at_operation_time": t0}):
            with self.subTest(**{k: str(v) for k, v in kwargs.items()}):
                with self.assertRaises(OperationFailure) as ctx:
                    with self.coll.watch(**kwargs) as lost:
                        lost.try_next()
                self.assertCode(ctx, 286)
                self.assertEqual(ctx.exception.details.get("codeName"),
                                 "ChangeStreamHistoryLost")
        # a recent resume point still works
        with self.coll.watch(start_at_operation_time=self.client.admin.command(
                "ping")["operationTime"]) as recent:
            self.coll.insert_one({"_id": "after"})
            self.assertEqual(next_change(recent)["documentKey"], {"_id": "after"})
