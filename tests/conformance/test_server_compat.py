"""Server behaviours a second driver (the Node.js driver) found test-mongod getting wrong
(issue 13, items 2-10), checked here with pymongo against what MongoDB 6.0 does. Run through
test_server.py (class names below are in its ALL list)."""
import struct
import time

import bson
from servertest import DB, MiB16, ServerTest, next_change, raw_connect, read_reply
from bson.son import SON
from pymongo.errors import OperationFailure

ALLOWANCE = 16 * 1024  # mongod's internal headroom over maxBsonObjectSize (SERVER-10643)
MAX_MESSAGE = 48000000


def op_msg_with_sequence(body, ident=None, docs=(), request_id=7):
    """An OP_MSG with a kind-0 body and optionally one kind-1 document sequence."""
    payload = struct.pack("<I", 0) + b"\x00" + body
    if ident is not None:
        seq = ident.encode() + b"\x00" + b"".join(docs)
        payload += b"\x01" + struct.pack("<i", 4 + len(seq)) + seq
    return struct.pack("<iiii", 16 + len(payload), request_id, 0, 2013) + payload


def doc_of_size(size, _id):
    """{_id, x: "aaa..."} encoded in exactly `size` bytes."""
    base = len(bson.encode({"_id": _id, "x": ""}))
    return bson.encode({"_id": _id, "x": "a" * (size - base)})


def stream_command(db, coll, spec, pipeline=()):
    """Opens a change stream with a raw aggregate; returns the cursor id."""
    reply = db.command("aggregate", coll, pipeline=[{"$changeStream": spec}] + list(pipeline),
                       cursor={})
    return reply["cursor"]["id"]


def get_more(db, coll, cursor_id, max_time_ms=1000):
    return db.command("getMore", cursor_id, collection=coll, maxTimeMS=max_time_ms)


class ArrayFilterDescriptions(ServerTest):
    """Item 2: UpdateArrayNode logs the whole array when several elements changed."""

    def test_several_elements_changed_gives_whole_array(self):
        self.coll.insert_one({"_id": 1, "events": [{"id": "a", "s": 0}, {"id": "b", "s": 0},
                                                   {"id": "c", "s": 0}]})
        with self.coll.watch() as stream:
            self.coll.update_one({"_id": 1}, {"$set": {"events.$[e].s": 1}},
                                 array_filters=[{"e.id": {"$in": ["a", "c"]}}])
            self.coll.update_one({"_id": 1}, {"$set": {"events.$[e].s": 2}},
                                 array_filters=[{"e.id": "b"}])
            self.coll.update_one({"_id": 1}, {"$set": {"events.$[e].s": 1}},
                                 array_filters=[{"e.s": {"$gte": 1}}])
            several = next_change(stream)["updateDescription"]["updatedFields"]
            one = next_change(stream)["updateDescription"]["updatedFields"]
            one_of_several = next_change(stream)["updateDescription"]["updatedFields"]
        self.assertEqual(several, {"events": [{"id": "a", "s": 1}, {"id": "b", "s": 0},
                                              {"id": "c", "s": 1}]})
        self.assertEqual(one, {"events.1.s": 2})
        self.assertEqual(one_of_several, {"events.1": {"id": "b", "s": 1}})


class RequiredImages(ServerTest):
    """Item 3: 'required' images that do not exist are 47 NoMatchingDocument at the event."""

    def check_required(self, spec, write):
        self.coll.insert_one({"_id": 1, "n": 0})
        cursor_id = stream_command(self.db, self.coll.name, spec)
        write()
        with self.assertRaises(OperationFailure) as ctx:
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                get_more(self.db, self.coll.name, cursor_id, 500)
        self.assertCode(ctx, 47)
        self.assertEqual(ctx.exception.details["codeName"], "NoMatchingDocument")
        self.assertNotIn("errorLabels", ctx.exception.details)
        self.assertIn("was not found for event", ctx.exception.details["errmsg"])

    def test_pre_image_required(self):
        self.check_required({"fullDocumentBeforeChange": "required"},
                            lambda: self.coll.delete_one({"_id": 1}))

    def test_post_image_required(self):
        self.check_required({"fullDocument": "required"},
                            lambda: self.coll.update_one({"_id": 1}, {"$inc": {"n": 1}}))

    def test_required_images_present_when_enabled(self):
        self.db.create_collection(self.coll.name,
                                  changeStreamPreAndPostImages={"enabled": True})
        self.coll.insert_one({"_id": 1, "n": 0})
        with self.coll.watch(full_document="required") as stream:
            self.coll.update_one({"_id": 1}, {"$inc": {"n": 1}})
            self.assertEqual(next_change(stream)["fullDocument"], {"_id": 1, "n": 1})


class ResumeTokens(ServerTest):
    """Items 4 and 5: a token this stream never produced is 280, labelled on aggregate too."""

    def test_other_collections_token_is_280_with_label(self):
        other = self.db[self.coll.name + "_other"]
        other.drop()
        with other.watch() as stream:
            other.insert_one({"_id": 1})
            token = next_change(stream)["_id"]
        self.coll.insert_one({"_id": 2})
        with self.assertRaises(OperationFailure) as ctx:
            stream_command(self.db, self.coll.name, {"resumeAfter": token})
        self.assertCode(ctx, 280)
        self.assertEqual(ctx.exception.details.get("errorLabels"),
                         ["NonResumableChangeStreamError"])
        # The database stream did produce it: resuming there works.
        cursor_id = stream_command(self.db, 1, {"resumeAfter": token})
        self.db.command("killCursors", "$cmd.aggregate", cursors=[cursor_id])

    def test_history_lost_on_aggregate_is_labelled(self):
        # A token from before any retained history (the server's start, for test-mongod).
        old = {"_data": "82" + "00000001" + "00000001" + "0000" + "01"}
        with self.assertRaises(OperationFailure) as ctx:
            stream_command(self.db, self.coll.name, {"resumeAfter": old})
        self.assertIn(ctx.exception.code, (280, 286, 260))
        if ctx.exception.code in (280, 286):
            self.assertEqual(ctx.exception.details.get("errorLabels"),
                             ["NonResumableChangeStreamError"])

    def test_failpoint_labels_replace_the_servers(self):
        self.failpoint("failCommand", {"times": 1}, failCommands=["aggregate"], errorCode=280)
        with self.assertRaises(OperationFailure) as ctx:
            stream_command(self.db, self.coll.name, {})
        self.assertEqual(ctx.exception.details.get("errorLabels"),
                         ["NonResumableChangeStreamError"])
        self.failpoint("failCommand", {"times": 1}, failCommands=["aggregate"], errorCode=280,
                       errorLabels=[])
        with self.assertRaises(OperationFailure) as ctx:
            stream_command(self.db, self.coll.name, {})
        self.assertNotIn("errorLabels", ctx.exception.details)


class MessageSizes(ServerTest):
    """Item 6: what mongod accepts per document and per message, and how it refuses more."""

    def exchange(self, sock, msg):
        """The reply, or None if the server closed the connection (maybe mid-send)."""
        try:
            sock.sendall(msg)
        except (ConnectionResetError, BrokenPipeError):
            return None
        return read_reply(sock)

    def insert_body(self, docs):
        return bson.encode(SON([("insert", self.coll.name), ("$db", DB),
                                ("documents", docs)]))

    def test_command_body_limit_is_16mib_plus_16kib(self):
        big = {"_id": 0, "x": "a" * (MiB16 - len(bson.encode({"_id": 0, "x": ""})))}
        small_len = MiB16 + ALLOWANCE - len(self.insert_body([big, {"_id": 1, "x": ""}]))
        small = {"_id": 1, "x": "a" * small_len}
        s = raw_connect()
        s.settimeout(60)
        try:
            body = self.insert_body([big, small])
            self.assertEqual(len(body), MiB16 + ALLOWANCE)
            reply = self.exchange(s, op_msg_with_sequence(body))
            self.assertEqual((reply["ok"], reply["n"]), (1.0, 2), reply.get("errmsg"))
            self.coll.delete_many({})
            small["x"] += "a"
            reply = self.exchange(s, op_msg_with_sequence(self.insert_body([big, small])))
            self.assertEqual((reply["ok"], reply["code"], reply["codeName"]),
                             (0.0, 10334, "BSONObjectTooLarge"))
            self.assertIn("BSONObj size: 16793601 (0x1004001) is invalid. Size must be between "
                          "0 and 16793600(16MB) First element: insert: ", reply["errmsg"])
            # The connection is still usable.
            ping = self.exchange(s, op_msg_with_sequence(bson.encode({"ping": 1, "$db": DB})))
            self.assertEqual(ping["ok"], 1.0)
        finally:
            s.close()
        self.assertEqual(self.coll.count_documents({}), 0)

    def test_sequence_documents(self):
        body = bson.encode(SON([("insert", self.coll.name), ("$db", DB)]))
        s = raw_connect()
        s.settimeout(60)
        try:
            reply = self.exchange(s, op_msg_with_sequence(body, "documents",
                                                          [doc_of_size(MiB16, 0)]))
            self.assertEqual((reply["ok"], reply["n"]), (1.0, 1), reply)
            reply = self.exchange(s, op_msg_with_sequence(body, "documents",
                                                          [doc_of_size(MiB16 + 1, 1)]))
            self.assertEqual((reply["ok"], reply["n"]), (1.0, 0))
            self.assertEqual(reply["writeErrors"][0]["code"], 2)
            self.assertIn("object to insert too large", reply["writeErrors"][0]["errmsg"])
            reply = self.exchange(s, op_msg_with_sequence(
                body, "documents", [doc_of_size(MiB16 + ALLOWANCE + 1, 2)]))
            self.assertEqual((reply["ok"], reply["code"]), (0.0, 10334))
            self.assertIn("First element: _id: 2", reply["errmsg"])
            ping = self.exchange(s, op_msg_with_sequence(bson.encode({"ping": 1, "$db": DB})))
            self.assertEqual(ping["ok"], 1.0)
        finally:
            s.close()
        self.assertEqual([d["_id"] for d in self.coll.find({}, {"x": 0})], [0])

    def test_message_limit_is_48_million_bytes(self):
        body = bson.encode(SON([("insert", self.coll.name), ("$db", DB)]))
        head = len(op_msg_with_sequence(body, "documents", []))
        docs = [doc_of_size(MiB16 - 1024, i) for i in range(2)]
        last = MAX_MESSAGE - head - sum(len(d) for d in docs)
        s = raw_connect()
        s.settimeout(60)
        try:
            msg = op_msg_with_sequence(body, "documents", docs + [doc_of_size(last, 2)])
            self.assertEqual(len(msg), MAX_MESSAGE)
            reply = self.exchange(s, msg)
            self.assertEqual((reply["ok"], reply["n"]), (1.0, 3), reply.get("errmsg"))
            msg = op_msg_with_sequence(body, "documents", docs + [doc_of_size(last + 1, 3)])
            self.assertIsNone(self.exchange(s, msg), "a longer message closes the connection")
        finally:
            s.close()


class WriteConcerns(ServerTest):
    """Item 7: a w the set cannot satisfy (more than its members: 2 for one member, 4 for
    three): applied, then writeConcernError 100 at once."""

    def too_many(self, more=1):
        """A w of `more` members beyond the set's data-bearing members (hello's hosts)."""
        return len(self.client.admin.command("hello").get("hosts", [None])) + more

    def test_w2_applies_then_reports_100_at_once(self):
        started = time.monotonic()
        w = self.too_many()
        reply = self.db.command(SON([("insert", self.coll.name), ("documents", [{"_id": 1}]),
                                     ("writeConcern", {"w": w, "wtimeout": 60000})]))
        self.assertLess(time.monotonic() - started, 30, "mongod does not wait for wtimeout")
        self.assertEqual(reply["n"], 1)
        wce = reply["writeConcernError"]
        self.assertEqual((wce["code"], wce["codeName"], wce["errmsg"]),
                         (100, "UnsatisfiableWriteConcern", "Not enough data-bearing nodes"))
        self.assertEqual(wce["errInfo"]["writeConcern"],
                         {"w": w, "wtimeout": 60000, "provenance": "clientSupplied"})
        self.assertEqual(self.coll.find_one(), {"_id": 1})

    def test_unknown_mode_is_79_and_majority_is_fine(self):
        reply = self.db.command(SON([("update", self.coll.name),
                                     ("updates", [{"q": {"_id": 1}, "u": {"$set": {"a": 1}},
                                                   "upsert": True}]),
                                     ("writeConcern", {"w": "dc2"})]))
        self.assertEqual(reply["n"], 1)
        wce = reply["writeConcernError"]
        self.assertEqual((wce["code"], wce["codeName"]), (79, "UnknownReplWriteConcern"))
        self.assertEqual(wce["errmsg"], "No write concern mode named 'dc2' found in replica "
                                        "set configuration")
        for w in (0, 1, "majority"):
            reply = self.db.command(SON([("delete", self.coll.name),
                                         ("deletes", [{"q": {"_id": 9}, "limit": 1}]),
                                         ("writeConcern", {"w": w})]))
            self.assertNotIn("writeConcernError", reply, w)

    def test_ddl_and_find_and_modify_too(self):
        reply = self.db.command(SON([("findAndModify", self.coll.name), ("query", {"_id": 5}),
                                     ("update", {"$set": {"x": 1}}), ("upsert", True),
                                     ("writeConcern", {"w": self.too_many(2), "j": True})]))
        self.assertEqual(reply["value"], None)
        self.assertEqual(reply["writeConcernError"]["code"], 100)
        self.assertEqual(reply["writeConcernError"]["errInfo"]["writeConcern"],
                         {"w": self.too_many(2), "j": True, "wtimeout": 0,
                          "provenance": "clientSupplied"})
        reply = self.db.command(SON([("createIndexes", self.coll.name),
                                     ("indexes", [{"key": {"x": 1}, "name": "x_1"}]),
                                     ("writeConcern", {"w": self.too_many()})]))
        self.assertEqual(reply["writeConcernError"]["code"], 100)
        self.assertEqual(self.coll.find_one({"_id": 5}), {"_id": 5, "x": 1})

    def test_malformed_w_fails_before_the_write(self):
        with self.assertRaises(OperationFailure) as ctx:
            self.db.command(SON([("insert", self.coll.name), ("documents", [{"_id": 1}]),
                                 ("writeConcern", {"w": -1})]))
        self.assertCode(ctx, 9)
        self.assertIsNone(self.coll.find_one())


class HintedIndexes(ServerTest):
    """Item 8: mongod 6.0 scans a hinted index even when it cannot answer the query, so a
    partial or sparse index leaves out the documents it does not hold (SERVER-26413 and
    SERVER-18449, both unresolved): no error, and not a silent full scan either."""

    def setUp(self):
        super().setUp()
        self.coll.insert_many([{"_id": 1, "x": 100}, {"_id": 2, "x": 100, "y": 1},
                               {"_id": 3, "z": 1}])
        self.coll.create_index("x", name="x_partial",
                               partialFilterExpression={"y": {"$exists": True}})
        self.coll.create_index("z", name="z_sparse", sparse=True)

    def test_find_count_aggregate_distinct_see_only_indexed_documents(self):
        self.assertEqual([d["_id"] for d in self.coll.find({"x": 100})], [1, 2])
        self.assertEqual([d["_id"] for d in self.coll.find({"x": 100}).hint("x_partial")], [2])
        self.assertEqual([d["_id"] for d in self.coll.find({}).hint([("z", 1)])], [3])
        self.assertEqual(self.db.command("count", self.coll.name, hint="x_partial")["n"], 1)
        self.assertEqual(self.coll.count_documents({"x": 100}, hint="x_partial"), 1)
        self.assertEqual(list(self.coll.aggregate([{"$group": {"_id": None, "n": {"$sum": 1}}}],
                                                  hint="x_partial")), [{"_id": None, "n": 1}])
        self.assertEqual(self.db.command("distinct", self.coll.name, key="_id",
                                         hint="z_sparse")["values"], [3])
        self.assertEqual([d["_id"] for d in self.coll.find({}).hint([("$natural", 1)])],
                         [1, 2, 3])

    def test_writes_through_a_hint_touch_only_indexed_documents(self):
        r = self.coll.update_many({"x": 100}, {"$set": {"seen": True}}, hint="x_partial")
        self.assertEqual(r.modified_count, 1)
        r = self.coll.delete_many({"x": 100}, hint="x_partial")
        self.assertEqual(r.deleted_count, 1)
        self.assertEqual([d["_id"] for d in self.coll.find()], [1, 3])
        with self.assertRaises(OperationFailure) as ctx:
            list(self.coll.find({}).hint("no_such_index"))
        self.assertCode(ctx, 2)

    def test_compatible_partial_index_answers_fully(self):
        """The relay's sweep: the query implies the partial filter, so nothing is lost."""
        self.coll.insert_many([{"_id": 10, "eventSeq": 1, "events": [{"seq": 1}]},
                               {"_id": 11, "eventSeq": 1, "events": []}])
        self.coll.create_index("eventSeq", name="outbox_pending",
                               partialFilterExpression={"events.0": {"$exists": True}})
        found = self.coll.find({"events.0": {"$exists": True}}).hint("outbox_pending")
        self.assertEqual([d["_id"] for d in found], [10])


class HelloAndStatus(ServerTest):
    """Item 10: topologyVersion and the awaitable hello (also streamed), serverStatus,
    buildInfo."""

    def send(self, sock, doc, flags=0, request_id=1):
        body = bson.encode(doc)
        payload = struct.pack("<I", flags) + b"\x00" + body
        sock.sendall(struct.pack("<iiii", 16 + len(payload), request_id, 0, 2013) + payload)

    def read(self, sock):
        """(document, flags, requestID, responseTo) of the next reply, or None."""
        header = b""
        while len(header) < 16:
            chunk = sock.recv(16 - len(header))
            if not chunk:
                return None
            header += chunk
        length, request_id, response_to, _ = struct.unpack("<iiii", header)
        rest = b""
        while len(rest) < length - 16:
            rest += sock.recv(length - 16 - len(rest))
        flags = struct.unpack("<I", rest[:4])[0]
        return bson.decode(rest[5:]), flags, request_id, response_to

    def test_topology_version_shape(self):
        hello = self.client.admin.command("hello")
        tv = hello["topologyVersion"]
        self.assertIsInstance(tv["processId"], bson.ObjectId)
        self.assertIsInstance(tv["counter"], bson.int64.Int64)
        self.assertEqual(self.client.admin.command("isMaster")["topologyVersion"], tv)

    def test_awaitable_hello_waits_then_answers(self):
        tv = self.client.admin.command("hello")["topologyVersion"]
        s = raw_connect()
        s.settimeout(30)
        try:
            started = time.monotonic()
            self.send(s, SON([("hello", 1), ("topologyVersion", tv), ("maxAwaitTimeMS", 500),
                              ("$db", "admin")]))
            reply, flags, _, response_to = self.read(s)
            self.assertGreaterEqual(time.monotonic() - started, 0.45)
            self.assertEqual((reply["ok"], flags, response_to), (1.0, 0, 1))
            self.assertEqual(reply["topologyVersion"], tv)
            stale = {"processId": bson.ObjectId(), "counter": bson.int64.Int64(5)}
            started = time.monotonic()
            self.send(s, SON([("hello", 1), ("topologyVersion", stale),
                              ("maxAwaitTimeMS", 20000), ("$db", "admin")]), request_id=2)
            reply, _, _, _ = self.read(s)
            self.assertLess(time.monotonic() - started, 15, "a stale version answers at once")
            self.assertEqual(reply["topologyVersion"], tv)
        finally:
            s.close()

    def test_exhaust_streams_replies_until_the_client_closes(self):
        tv = self.client.admin.command("hello")["topologyVersion"]
        s = raw_connect()
        s.settimeout(30)
        try:
            self.send(s, SON([("hello", 1), ("topologyVersion", tv), ("maxAwaitTimeMS", 200),
                              ("$db", "admin")]), flags=1 << 16, request_id=7)
            previous = 7
            for _ in range(3):
                reply, flags, request_id, response_to = self.read(s)
                self.assertEqual((reply["ok"], flags & 2, response_to), (1.0, 2, previous))
                previous = request_id
        finally:
            s.close()
        self.assertEqual(self.client.admin.command("ping")["ok"], 1.0)

    def test_pymongo_streams_its_monitoring(self):
        from pymongo import monitoring

        class Heartbeats(monitoring.ServerHeartbeatListener):
            awaited = failures = 0

            def started(self, event):
                pass

            def succeeded(self, event):
                Heartbeats.awaited += 1 if getattr(event, "awaited", False) else 0

            def failed(self, event):
                Heartbeats.failures += 1

        client = self.new_client(heartbeatFrequencyMS=500, event_listeners=[Heartbeats()])
        client.admin.command("ping")
        deadline = time.monotonic() + 20
        while Heartbeats.awaited < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        self.assertGreaterEqual(Heartbeats.awaited, 2, "awaited (streamed) heartbeats")
        self.assertEqual(Heartbeats.failures, 0)
        self.assertEqual(client.admin.command("ping")["ok"], 1.0)

    def test_awaitable_hello_argument_errors(self):
        tv = self.client.admin.command("hello")["topologyVersion"]
        for extra, code in ((SON([("topologyVersion", tv)]), 31368),
                            (SON([("maxAwaitTimeMS", 10)]), 31368),
                            (SON([("topologyVersion", {"processId": tv["processId"],
                                                       "counter": bson.int64.Int64(-1)}),
                                  ("maxAwaitTimeMS", 10)]), 31372),
                            (SON([("topologyVersion", {"processId": tv["processId"],
                                                       "counter": bson.int64.Int64(9)}),
                                  ("maxAwaitTimeMS", 10)]), 31382)):
            cmd = SON([("hello", 1)])
            cmd.update(extra)
            with self.assertRaises(OperationFailure) as ctx:
                self.client.admin.command(cmd)
            self.assertCode(ctx, code)

    def test_server_status_and_build_info(self):
        status = self.client.admin.command("serverStatus")
        self.assertEqual(status["process"], "mongod")
        self.assertIsInstance(status["uptime"], float)
        self.assertIsInstance(status["uptimeMillis"], bson.int64.Int64)
        self.assertIsInstance(status["pid"], bson.int64.Int64)
        self.assertEqual(status["repl"]["setName"], "rs0")
        self.assertTrue(status["repl"]["isWritablePrimary"])
        self.assertIn("topologyVersion", status["repl"])
        info = self.client.admin.command("buildInfo")
        major, minor, patch = (int(p) for p in info["version"].split("."))
        self.assertEqual((major, minor), (6, 0))
        self.assertLess(patch, 30, "a 6.0 patch release that exists")
        self.assertEqual(info["versionArray"], [major, minor, patch, 0])
        self.assertEqual(status["version"], info["version"])


class Aggregation(ServerTest):
    """Item 9: $lookup (equality, pipeline with let, both), the array and accumulator-style
    expressions, and 168 only for names MongoDB does not know either."""

    def setUp(self):
        super().setUp()
        self.items = self.db[self.coll.name + "_items"]
        self.items.drop()
        self.coll.insert_many([{"_id": 1, "min": 2}, {"_id": 2, "min": 9}])
        self.items.insert_many([{"_id": 10, "order": 1, "q": 5}, {"_id": 11, "order": 1, "q": 1},
                                {"_id": 12, "order": 2, "q": 7}])

    def test_lookup_forms(self):
        eq = list(self.coll.aggregate([
            {"$lookup": {"from": self.items.name, "localField": "_id",
                         "foreignField": "order", "as": "its"}},
            {"$project": {"n": {"$size": "$its"}}}]))
        self.assertEqual(eq, [{"_id": 1, "n": 2}, {"_id": 2, "n": 1}])
        piped = list(self.coll.aggregate([
            {"$lookup": {"from": self.items.name, "let": {"o": "$_id", "m": "$min"},
                         "pipeline": [{"$match": {"$expr": {"$and": [
                             {"$eq": ["$order", "$$o"]}, {"$gte": ["$q", "$$m"]}]}}},
                             {"$project": {"_id": 1}}],
                         "as": "big"}},
            {"$project": {"big": 1}}]))
        self.assertEqual(piped, [{"_id": 1, "big": [{"_id": 10}]}, {"_id": 2, "big": []}])
        with self.assertRaises(OperationFailure) as ctx:
            list(self.coll.aggregate([{"$lookup": {"from": self.items.name, "as": "x"}}]))
        self.assertCode(ctx, 9)

    def test_command_let(self):
        r = self.db.command("aggregate", self.coll.name,
                            pipeline=[{"$match": {"$expr": {"$eq": ["$_id", "$$want"]}}}],
                            let={"want": 2}, cursor={})
        self.assertEqual(r["cursor"]["firstBatch"], [{"_id": 2, "min": 9}])

    def test_expressions(self):
        self.items.insert_one({"_id": 20, "a": [3, 1, 2], "o": [{"v": "x"}, {"v": "y"}]})
        doc = self.items.aggregate([{"$match": {"_id": 20}}, {"$project": {
            "_id": 0,
            "slice": {"$slice": ["$a", 1, 2]},
            "filter": {"$filter": {"input": "$a", "as": "x", "cond": {"$gt": ["$$x", 1]}}},
            "map": {"$map": {"input": "$o", "in": "$$this.v"}},
            "merged": {"$mergeObjects": [{"k": 1}, {"k": 2, "j": 3}]},
            "long": {"$toLong": "7"},
            "first": {"$first": "$a"}, "last": {"$last": "$a"},
            "max": {"$max": "$a"}, "min": {"$min": [4, "$missing", 2]},
            "sum": {"$sum": "$a"}}}]).next()
        self.assertEqual(doc, {"slice": [1, 2], "filter": [3, 2], "map": ["x", "y"],
                               "merged": {"k": 2, "j": 3}, "long": 7, "first": 3, "last": 2,
                               "max": 3, "min": 2, "sum": 6})
        self.assertIsInstance(doc["long"], bson.int64.Int64)

    def test_unknown_expression_is_168(self):
        with self.assertRaises(OperationFailure) as ctx:
            list(self.coll.aggregate([{"$project": {"x": {"$noSuchOperator": 1}}}]))
        self.assertCode(ctx, 168)
        self.assertEqual(ctx.exception.details["codeName"], "InvalidPipelineOperator")
        with self.assertRaises(OperationFailure) as ctx:
            list(self.coll.aggregate([{"$group": {"_id": None, "x": {"$noSuch": 1}}}]))
        self.assertCode(ctx, 15952)
        with self.assertRaises(OperationFailure) as ctx:
            list(self.coll.find({"a": {"$noSuch": 1}}))
        self.assertCode(ctx, 2)


COMPAT = [ArrayFilterDescriptions, RequiredImages, ResumeTokens, MessageSizes, WriteConcerns, HintedIndexes, HelloAndStatus, Aggregation]
