"""Change streams seen through pymongo's watch(): shapes, resuming, history loss."""
import datetime
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from servertest import DB, ServerTest, bson, next_change, no_change  # noqa: E402
from bson.int64 import Int64  # noqa: E402
from bson.son import SON  # noqa: E402
from pymongo import monitoring  # noqa: E402
from pymongo.errors import OperationFailure  # noqa: E402


class Commands(monitoring.CommandListener):
    """Counts the commands a client sends, to prove that a fault made it resume."""

    def __init__(self):
        self.names = []

    def started(self, event):
        self.names.append(event.command_name)

    def succeeded(self, event):
        pass

    def failed(self, event):
        pass


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

    def test_more_update_operators(self):
        self.coll.insert_one({"_id": 1, "x": 3, "lo": 5, "hi": 5, "old": 1, "ts": 0})
        stream = self.coll.watch()
        self.addCleanup(stream.close)
        steps = [({"$mul": {"x": 2}}, {"x": 6}, []),
                 ({"$mul": {"fresh": 2}}, {"fresh": 0}, []),
                 ({"$min": {"lo": 1}}, {"lo": 1}, []),
                 ({"$max": {"hi": 9}}, {"hi": 9}, []),
                 ({"$rename": {"old": "new"}}, {"new": 1}, ["old"]),
                 ({"$set": {"x": 7}, "$unset": {"fresh": 1}}, {"x": 7}, ["fresh"])]
        for update, fields, removed in steps:
            with self.subTest(update=update):
                self.coll.update_one({"_id": 1}, update)
                desc = next_change(stream)["updateDescription"]
                self.assertEqual(desc, {"updatedFields": fields, "removedFields": removed,
                                        "truncatedArrays": []})
        self.coll.update_one({"_id": 1}, {"$currentDate": {"ts": True}})
        fields = next_change(stream)["updateDescription"]["updatedFields"]
        self.assertEqual(list(fields), ["ts"])
        self.assertIsInstance(fields["ts"], datetime.datetime)
        for noop in ({"$max": {"hi": 1}}, {"$min": {"lo": 3}}, {"$mul": {"x": 1}},
                     {"$bit": {"x": {"or": 3}}}):
            self.assertEqual(self.coll.update_one({"_id": 1}, noop).modified_count, 0)
        self.coll.update_one({"_id": 1}, {"$bit": {"x": {"and": 3}}})  # 7 & 3
        self.assertEqual(next_change(stream)["updateDescription"]["updatedFields"], {"x": 3})
        self.coll.insert_one({"_id": "marker"})
        self.assertEqual(next_change(stream)["documentKey"], {"_id": "marker"})

    def test_stream_lifecycle_across_drops(self):
        name = DB + "_life"
        self.client.drop_database(name)
        db = self.client[name]
        coll, other = db["a"], db["b"]
        coll.insert_one({"_id": 1})
        other.insert_one({"_id": 1})
        coll_stream, db_stream = coll.watch(), db.watch()
        cluster = self.client.watch([{"$match": {"ns.db": name}}])
        for st in (coll_stream, db_stream, cluster):
            self.addCleanup(st.close)
        coll.drop()
        drop = next_change(coll_stream)
        self.assertEqual(list(drop), ["_id", "operationType", "clusterTime", "wallTime", "ns"])
        self.assertEqual((drop["operationType"], drop["ns"]), ("drop", {"db": name, "coll": "a"}))
        inv = next_change(coll_stream)
        self.assertEqual(list(inv), ["_id", "operationType", "clusterTime", "wallTime"])
        self.assertEqual(inv["operationType"], "invalidate")
        self.assertEqual(next_change(db_stream)["operationType"], "drop")
        other.insert_one({"_id": 2})  # a database stream goes on after a collection drop
        self.assertEqual(next_change(db_stream)["documentKey"], {"_id": 2})
        self.client.drop_database(name)
        ev = next_change(db_stream)
        self.assertEqual((ev["operationType"], ev["ns"]), ("drop", {"db": name, "coll": "b"}))
        ev = next_change(db_stream)
        self.assertEqual((ev["operationType"], ev["ns"]), ("dropDatabase", {"db": name}))
        self.assertEqual(next_change(db_stream)["operationType"], "invalidate")
        ops = [next_change(cluster)["operationType"] for _ in range(4)]
        self.assertEqual(ops, ["drop", "insert", "drop", "dropDatabase"])
        db["c"].insert_one({"_id": "again"})  # a cluster stream is never invalidated
        self.assertEqual(next_change(cluster)["documentKey"], {"_id": "again"})
        self.client.drop_database(name)

    def test_bad_stage_fails_the_aggregate(self):
        # MongoDB parses the whole pipeline when the stream opens, not at the first event
        for pipeline, code in (([{"$match": {"a": {"$foo": 1}}}], 2),
                               ([{"$bogusStage": {}}], 40324)):
            with self.subTest(pipeline=pipeline):
                with self.assertRaises(OperationFailure) as ctx:
                    self.coll.watch(pipeline)
                self.assertCode(ctx, code)

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


    def test_database_and_cluster_stream_cursors(self):
        """getMore/killCursors address these cursors by the collection "$cmd.aggregate"."""
        for db in (self.db, self.client.admin):
            with self.subTest(db=db.name):
                stage = {"$changeStream": {"allChangesForCluster": True}} \
                    if db.name == "admin" else {"$changeStream": {}}
                reply = db.command("aggregate", 1, pipeline=[stage], cursor={})
                cursor = reply["cursor"]
                self.assertEqual(cursor["ns"], "%s.$cmd.aggregate" % db.name)
                self.assertIsInstance(cursor["id"], bson.int64.Int64)
                self.assertNotEqual(cursor["id"], 0)
                more = db.command("getMore", cursor["id"], collection="$cmd.aggregate",
                                  maxTimeMS=100)
                self.assertEqual(more["cursor"]["id"], cursor["id"])
                self.assertIn("postBatchResumeToken", more["cursor"])
                killed = db.command("killCursors", "$cmd.aggregate", cursors=[cursor["id"]])
                self.assertEqual(killed["cursorsKilled"], [cursor["id"]])


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

    def _watch_through_fault(self, setup_fault, resumes):
        seen_cmds = Commands()
        coll = self.new_client(event_listeners=[seen_cmds])[DB][self.coll.name]
        stream = coll.watch(batch_size=2, max_await_time_ms=300)
        self.addCleanup(stream.close)
        self.coll.insert_many([{"_id": i} for i in range(1, 4)])
        seen = [next_change(stream)["documentKey"]["_id"] for _ in range(3)]
        setup_fault()
        self.coll.insert_many([{"_id": i} for i in range(4, 9)])
        while len(seen) < 8:
            seen.append(next_change(stream, timeout=15)["documentKey"]["_id"])
        self.assertIsNone(no_change(stream, 0.8))
        self.assertEqual(seen, list(range(1, 9)), "events lost or repeated")
        self.assertEqual(seen_cmds.names.count("aggregate"), 1 + resumes,
                         "the fault did not make pymongo resume: %s" % seen_cmds.names)

    def test_resume_after_closed_connection(self):
        self._watch_through_fault(lambda: self.failpoint(
            "failCommand", {"times": 1}, failCommands=["getMore"], closeConnection=True), 1)

    def test_resume_after_two_closed_connections(self):
        self._watch_through_fault(lambda: self.failpoint(
            "failCommand", {"times": 2}, failCommands=["getMore"], closeConnection=True), 2)

    def test_resume_after_resumable_getmore_error(self):
        def fault():
            self.failpoint("failGetMoreAfterCursorCheckout", {"times": 1}, errorCode=6)
        self._watch_through_fault(fault, 1)

    def test_resume_while_writes_continue(self):
        seen_cmds = Commands()
        coll = self.new_client(event_listeners=[seen_cmds])[DB][self.coll.name]
        stream = coll.watch(batch_size=7, max_await_time_ms=200)
        self.addCleanup(stream.close)
        done = threading.Event()

        def write():
            writer = self.new_client()[DB][self.coll.name]
            for i in range(300):
                writer.insert_one({"_id": i})
                if i % 60 == 30:
                    self.failpoint("failCommand", {"times": 1}, failCommands=["getMore"],
                                   closeConnection=True)
            done.set()
        th = threading.Thread(target=write)
        th.start()
        seen = []
        deadline = time.monotonic() + 45
        while len(seen) < 300 and time.monotonic() < deadline:
            ev = stream.try_next()
            if ev is not None:
                seen.append(ev["documentKey"]["_id"])
        th.join(30)
        self.assertTrue(done.is_set())
        self.assertEqual(seen, list(range(300)), "events lost, repeated or reordered")
        # a failpoint set again before the previous one fired replaces it: >= 1 resume
        self.assertGreaterEqual(seen_cmds.names.count("aggregate"), 2, "no resume happened")

    def test_resumable_error_label_and_non_resumable_error(self):
        """Only the label decides (wire >= 9); failCommand never adds it by itself.

        As MongoDB's change-streams-resume-errorLabels spec tests: failCommand on getMore
        with code 6 and no errorLabels is *not* resumed ("failCommand will not add the allow
        list error label"), an explicit errorLabels: [ResumableChangeStreamError] is.
        """
        seen_cmds = Commands()
        coll = self.new_client(event_listeners=[seen_cmds])[DB][self.coll.name]
        stream = coll.watch(max_await_time_ms=200)
        self.addCleanup(stream.close)
        self.failpoint("failCommand", {"times": 1}, failCommands=["getMore"], errorCode=50,
                       errorLabels=["ResumableChangeStreamError"])
        stream.try_next()  # resumed once: no error reaches the application
        self.assertEqual(seen_cmds.names, ["aggregate", "getMore", "aggregate"])
        for code in (6, 216):
            with self.subTest(code=code):
                self.failpoint("failCommand", {"times": 1}, failCommands=["getMore"],
                               errorCode=code)
                with self.assertRaises(OperationFailure) as ctx:
                    next_change(stream, timeout=3)
                self.assertCode(ctx, code)
                self.assertFalse(ctx.exception.has_error_label("ResumableChangeStreamError"))
                stream = coll.watch(max_await_time_ms=200)
                self.addCleanup(stream.close)


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
        # a resume point inside the retained history still works
        with self.coll.watch() as live:
            self.coll.insert_many([{"_id": "r1"}, {"_id": "r2"}])
            r1 = next_change(live)
        with self.coll.watch(resume_after=r1["_id"]) as again:
            self.assertEqual(next_change(again)["documentKey"], {"_id": "r2"})


class OutboxPatterns(ServerTest):
    """The exact query, update and change-stream shapes liboutbox and the relay send."""

    def relay_pipeline(self):
        return [{"$match": {
            "ns.coll": {"$in": [self.coll.name]},
            "$or": [{"operationType": {"$in": ["insert", "replace"]},
                     "fullDocument.events.0": {"$exists": True}},
                    {"operationType": "update",
                     "updateDescription.updatedFields.eventSeq": {"$exists": True}},
                    {"operationType": "invalidate"}]}}]

    def commit(self, version, seq, events, max_pending=3, extra=None):
        flt = {"_id": 1, "version": Int64(version), "eventSeq": Int64(seq),
               "events.%d" % (max_pending - len(events)): {"$exists": False}}
        update = {"$set": dict({"version": Int64(version + 1),
                                "eventSeq": Int64(seq + len(events))}, **(extra or {})),
                  "$push": {"events": {"$each": events}}}
        return self.coll.update_one(flt, update).matched_count

    def test_commit_and_relay_stream(self):
        self.coll.create_index([("eventSeq", 1)], name="outbox_pending",
                               partialFilterExpression={"events.0": {"$exists": True}})
        stream = self.db.watch(self.relay_pipeline(), full_document="default")
        self.addCleanup(stream.close)
        self.coll.insert_one({"_id": 0, "version": Int64(1), "eventSeq": Int64(0),
                              "events": []})  # no pending event: filtered out
        self.coll.insert_one({"_id": 1, "version": Int64(1), "eventSeq": Int64(1),
                              "events": [{"seq": 1, "type": "created"}]})
        e = [{"seq": 2, "type": "a"}, {"seq": 3, "type": "b"}]
        self.assertEqual(self.commit(1, 1, e, max_pending=2), 0)  # 1 pending + 2 > 2
        ins = next_change(stream)
        self.assertEqual((ins["operationType"], ins["documentKey"]), ("insert", {"_id": 1}))
        # the relay publishes event 1 and pulls it: an update without eventSeq, filtered out
        self.coll.update_one({"_id": 1, "events": {"$in": [{"seq": 1, "type": "created"}]}},
                             {"$pull": {"events": {"$in": [{"seq": 1, "type": "created"}]}}})
        self.assertEqual(self.commit(1, 1, e, extra={"name": "x"}), 1)
        upd = next_change(stream)
        self.assertEqual(upd["operationType"], "update")
        self.assertEqual(upd["updateDescription"]["updatedFields"],
                         {"version": 2, "eventSeq": 3, "name": "x", "events": e})
        self.assertEqual(self.commit(2, 3, [{"seq": 4, "type": "c"}]), 1)
        upd = next_change(stream)
        self.assertEqual(upd["updateDescription"]["updatedFields"],
                         {"version": 3, "eventSeq": 4, "events.2": {"seq": 4, "type": "c"}})
        # three pending: a further event does not fit (events.2 exists)
        self.assertEqual(self.commit(3, 4, [{"seq": 5, "type": "d"}]), 0)
        pending = list(self.coll.find({"events.0": {"$exists": True}}).sort("eventSeq", 1))
        self.assertEqual([d["_id"] for d in pending], [1])
        swept = list(self.coll.find({"events.0": {"$exists": True}},  # the relay's sweep
                                    {"events": 1, "eventSeq": 1}).hint("outbox_pending"))
        self.assertEqual(swept, [{"_id": 1, "eventSeq": 4, "events": e + [
            {"seq": 4, "type": "c"}]}])
        # field order matters for $in/$pull on whole documents
        res = self.coll.update_one({"_id": 1}, {"$pull": {"events": {"$in": [
            SON([("type", "a"), ("seq", 2)])]}}})
        self.assertEqual(res.modified_count, 0)
        # deleting only an entity without pending events
        self.assertEqual(self.coll.delete_one({"_id": 1, "events.0": {"$exists": False}})
                         .deleted_count, 0)
        self.assertEqual(self.coll.delete_one({"_id": 0, "events.0": {"$exists": False}})
                         .deleted_count, 1)
        self.coll.insert_one({"_id": "marker", "events": [{"seq": 1}]})
        self.assertEqual(next_change(stream)["documentKey"], {"_id": "marker"})
