#!/usr/bin/python3
"""pymongo 3.11 against a replica set of three members (test-mongod --members 3).

One seed (replicaSet=rs0) finds every member; a secondary refuses writes as 6.0 does
("not master" to a client that never said hello, as pymongo 3.11); a primary that steps down
while a retryable insert is held by failCommand's blockConnection answers it 10107 with
RetryableWriteError, and pymongo retries it once on the new primary, where it runs once; a
primary that is gone (testMemberFault, --enable-test-commands) is replaced and pymongo's
insert (retried at most once) lands on its successor; w: "majority" times out with 64 and a
change stream holds a write back while the secondaries are paused; a paused secondary and
readConcern majority read stale data; a causally consistent session reads its own writes
from lagging secondaries (afterClusterTime); an isolated primary's write is rolled back at the heal
while pymongo, given every seed, writes to the newer primary; a majority read on an isolated
primary sees the data as of the cut, not its own later w:1 writes, and a causal majority read
after such a write waits (50 at maxTimeMS) while a local one answers; the new primary accepts
that write's time gossiped after the rollback.
Against a real server: a set of three members with test commands. Exit 77 (skip) without.
"""
import os
import sys
import threading
import time
import unittest

try:
    import pymongo
    from pymongo import monitoring
    from pymongo.errors import (ExecutionTimeout, NotMasterError, OperationFailure,
                                WTimeoutError)
    from pymongo.read_concern import ReadConcern
    from pymongo.read_preferences import ReadPreference
    from pymongo.write_concern import WriteConcern
except ImportError as exc:  # pragma: no cover
    print("mongod-replset-pymongo: SKIP: pymongo not importable (%s)" % exc)
    sys.exit(77)

URI = os.environ["OUTBOX_TEST_MONGODB_URI"]
SEED = URI.split("//", 1)[1].split("/", 1)[0].split("@")[-1]


def direct(host):
    return pymongo.MongoClient("mongodb://%s/?directConnection=true" % host,
                               serverSelectionTimeoutMS=5000)


def roles():
    """The members the seed names and the one that says it is primary."""
    with direct(SEED) as seed:
        hosts = seed.admin.command("isMaster")["hosts"]
    primary = None
    for host in hosts:
        with direct(host) as c:
            if c.admin.command("isMaster")["ismaster"]:
                primary = host
    return hosts, primary


class Inserts(monitoring.CommandListener):
    def __init__(self):
        self.events = []

    def started(self, event):
        if event.command_name == "insert":
            self.events.append(("started", "%s:%d" % event.connection_id, None))

    def succeeded(self, event):
        if event.command_name == "insert":
            self.events.append(("succeeded", "%s:%d" % event.connection_id, None))

    def failed(self, event):
        if event.command_name == "insert":
            self.events.append(("failed", "%s:%d" % event.connection_id,
                                event.failure.get("code")))


class ReplicaSet(unittest.TestCase):
    def setUp(self):
        self.hosts, self.primary = roles()
        if len(self.hosts) < 3:
            self.skipTest("needs a replica set of three members")

    def test_one_seed_discovers_every_member(self):
        with pymongo.MongoClient("mongodb://%s/?replicaSet=rs0" % SEED,
                                 serverSelectionTimeoutMS=5000) as client:
            client.admin.command("ping")
            deadline = time.time() + 5
            while len(client.secondaries) < 2 and time.time() < deadline:
                time.sleep(0.05)
            self.assertEqual("%s:%d" % client.primary, self.primary)
            self.assertEqual(len(client.secondaries), 2)
            self.assertEqual(len(client.nodes), 3)

    def test_secondary_refuses_writes(self):
        secondary = next(h for h in self.hosts if h != self.primary)
        with direct(secondary) as c:
            with self.assertRaises(NotMasterError) as ctx:
                c.outbox_replset.refused.insert_one({"x": 1})
            self.assertEqual(ctx.exception.details["code"], 10107)
            self.assertEqual(ctx.exception.details["errmsg"], "not master")
            self.assertIn("topologyVersion", ctx.exception.details)

    def test_follows_stepdown_and_retries_the_write_once(self):
        listener = Inserts()
        old = self.primary
        with pymongo.MongoClient("mongodb://%s/?replicaSet=rs0&appname=rs-follow-py" % SEED,
                                 serverSelectionTimeoutMS=5000,
                                 event_listeners=[listener]) as client:
            coll = client.outbox_replset["follow_%d" % os.getpid()]
            coll.insert_one({"_id": 1})
            with direct(old) as admin:
                admin.admin.command("configureFailPoint", "failCommand", mode={"times": 1},
                                    data={"failCommands": ["insert"], "blockConnection": True,
                                          "blockTimeMS": 1000, "appName": "rs-follow-py"})

            def step_down():
                time.sleep(0.3)
                with direct(old) as admin:
                    admin.admin.command("replSetStepDown", 5, secondaryCatchUpPeriodSecs=0)

            listener.events.clear()
            thread = threading.Thread(target=step_down)
            thread.start()
            coll.insert_one({"_id": 2})
            thread.join()
            events = listener.events
            self.assertEqual([e[0] for e in events], ["started", "failed", "started",
                                                      "succeeded"], events)
            self.assertEqual(events[1][1:], (old, 10107))
            self.assertNotEqual(events[3][1], old)
            self.assertEqual(coll.count_documents({"_id": 2}), 1)
            self.assertEqual(roles()[1], events[3][1])
        with direct(old) as c:
            c.admin.command("replSetFreeze", 0)

    def test_follows_a_primary_that_is_gone(self):
        """testMemberFault refuse: connections reset, the set elects another primary after
        the election timeout, pymongo retries the insert once there."""
        listener = Inserts()
        old = self.primary
        via = next(h for h in self.hosts if h != old)
        with pymongo.MongoClient("mongodb://%s/?replicaSet=rs0" % SEED,
                                 serverSelectionTimeoutMS=5000,
                                 event_listeners=[listener]) as client:
            coll = client.outbox_replset["gone_%d" % os.getpid()]
            coll.insert_one({"_id": 1})
            with direct(via) as admin:
                try:
                    admin.admin.command("testMemberFault", old, mode="refuse")
                except OperationFailure as exc:
                    if exc.code == 59:
                        self.skipTest("no testMemberFault (--enable-test-commands)")
                    raise
            try:
                listener.events.clear()
                coll.insert_one({"_id": 2})
                # pymongo's streaming monitor may see the reset first and send the insert
                # straight to the new primary; else the insert fails on the old one and
                # its one retry goes there.
                events = listener.events
                self.assertEqual(events[-1][0], "succeeded", events)
                self.assertNotEqual(events[-1][1], old)
                self.assertLessEqual(len(events), 4, events)
                for kind, host, _ in events[:-2]:
                    self.assertEqual(host, old, events)
                self.assertEqual(coll.count_documents({"_id": 2}), 1)
                with direct(events[-1][1]) as successor:
                    self.assertTrue(successor.admin.command("isMaster")["ismaster"])
            finally:
                with direct(via) as admin:
                    admin.admin.command("testMemberFault", old, mode="heal")
        with direct(old) as c:
            self.assertTrue(c.admin.command("isMaster")["secondary"])

    def fault(self, host, mode, **kw):
        with direct(next(h for h in self.hosts if h != host)) as admin:
            try:
                admin.admin.command("testMemberFault", host, mode=mode, **kw)
            except OperationFailure as exc:
                if exc.code == 59:
                    self.skipTest("no testMemberFault (--enable-test-commands)")
                raise

    def test_majority_write_times_out_while_secondaries_are_paused(self):
        secondaries = [h for h in self.hosts if h != self.primary]
        for host in secondaries:
            self.fault(host, "pause")
        try:
            with direct(self.primary) as c:
                coll = c.outbox_replset["wmaj_%d" % os.getpid()].with_options(
                    write_concern=WriteConcern(w="majority", wtimeout=300))
                with self.assertRaises(WTimeoutError) as ctx:
                    coll.insert_one({"_id": 1})
                self.assertEqual(ctx.exception.code, 64)
                self.assertEqual(ctx.exception.details["codeName"], "WriteConcernFailed")
                self.assertTrue(ctx.exception.details["errInfo"]["wtimeout"])
                self.assertEqual(coll.count_documents({"_id": 1}), 1)
                self.fault(secondaries[0], "resume")
                coll.insert_one({"_id": 2})
        finally:
            for host in secondaries:
                self.fault(host, "resume")

    def test_change_stream_waits_for_the_commit_point(self):
        secondaries = [h for h in self.hosts if h != self.primary]
        with direct(self.primary) as c:
            coll = c.outbox_replset["csmaj_%d" % os.getpid()]
            with coll.watch(max_await_time_ms=300) as stream:
                for host in secondaries:
                    self.fault(host, "pause")
                try:
                    coll.insert_one({"_id": 1})
                    self.assertIsNone(stream.try_next())
                    self.fault(secondaries[0], "resume")
                    change = None
                    for _ in range(10):
                        change = stream.try_next()
                        if change:
                            break
                    self.assertIsNotNone(change)
                    self.assertEqual(change["documentKey"], {"_id": 1})
                finally:
                    for host in secondaries:
                        self.fault(host, "resume")

    def test_secondary_and_majority_reads_are_stale(self):
        secondaries = [h for h in self.hosts if h != self.primary]
        name = "stale_%d" % os.getpid()
        for host in secondaries:
            self.fault(host, "pause")
        try:
            with direct(self.primary) as p, direct(secondaries[0]) as s:
                p.outbox_replset[name].insert_one({"_id": 1})
                on_secondary = s.outbox_replset.get_collection(
                    name, read_preference=ReadPreference.SECONDARY_PREFERRED)
                majority = p.outbox_replset.get_collection(
                    name, read_concern=ReadConcern("majority"))
                self.assertIsNone(on_secondary.find_one({"_id": 1}))
                self.assertIsNone(majority.find_one({"_id": 1}))
                self.assertEqual(p.outbox_replset[name].count_documents({}), 1)
                self.fault(secondaries[0], "resume")
                self.assertEqual(on_secondary.find_one({"_id": 1}), {"_id": 1})
                self.assertEqual(majority.find_one({"_id": 1}), {"_id": 1})
        finally:
            for host in secondaries:
                self.fault(host, "resume")

    def test_causal_session_reads_its_writes_on_a_lagging_secondary(self):
        """A causally consistent session sends afterClusterTime: the secondary waits until
        it has applied the session's write instead of answering without it."""
        secondaries = [h for h in self.hosts if h != self.primary]
        for host in secondaries:
            self.fault(host, "lag", ms=600)
        try:
            with pymongo.MongoClient("mongodb://%s/?replicaSet=rs0" % SEED,
                                     serverSelectionTimeoutMS=5000) as client:
                coll = client.outbox_replset.get_collection(
                    "causal_%d" % os.getpid(), read_preference=ReadPreference.SECONDARY)
                with client.start_session(causal_consistency=True) as session:
                    coll.insert_one({"_id": 1, "v": 1}, session=session)
                    self.assertEqual(coll.find_one({"_id": 1}, session=session),
                                     {"_id": 1, "v": 1})
                    coll.update_one({"_id": 1}, {"$set": {"v": 2}}, session=session)
                    self.assertEqual(coll.find_one({"_id": 1}, session=session),
                                     {"_id": 1, "v": 2})
                    self.assertEqual(coll.count_documents({}, session=session), 1)
                # Without the session's afterClusterTime the secondary answers at once,
                # without the newest write.
                coll.insert_one({"_id": 2})
                self.assertIsNone(coll.find_one({"_id": 2}))
        finally:
            for host in secondaries:
                self.fault(host, "lag", ms=-1)

    def await_new_primary(self, old):
        deadline = time.time() + 5
        while time.time() < deadline:
            for host in self.hosts:
                if host != old:
                    with direct(host) as c:
                        if c.admin.command("isMaster")["ismaster"]:
                            return host
            time.sleep(0.05)
        self.fail("no new primary")

    def test_isolated_primary_is_rolled_back(self):
        old = self.primary
        name = "isolated_%d" % os.getpid()
        self.fault(old, "isolate")
        try:
            with direct(old) as c:
                c.outbox_replset[name].insert_one({"_id": 1})
            new = self.await_new_primary(old)
            with direct(old) as c:
                self.assertTrue(c.admin.command("isMaster")["ismaster"])
            listener = Inserts()
            with pymongo.MongoClient("mongodb://%s/?replicaSet=rs0" % ",".join(self.hosts),
                                     serverSelectionTimeoutMS=5000,
                                     event_listeners=[listener]) as client:
                # pymongo selects the first primary it hears from; once it has heard from
                # both, the newer electionId wins and the stale one is Unknown.
                deadline = time.time() + 5
                while time.time() < deadline and (
                        client.primary is None or "%s:%d" % client.primary != new):
                    time.sleep(0.02)
                self.assertEqual("%s:%d" % client.primary, new)
                client.outbox_replset[name].insert_one({"_id": 2})
                self.assertEqual(listener.events[-1][:2], ("succeeded", new), listener.events)
        finally:
            self.fault(old, "heal")
        with direct(old) as c:
            coll = c.outbox_replset.get_collection(
                name, read_preference=ReadPreference.SECONDARY_PREFERRED)
            self.assertEqual([d["_id"] for d in coll.find()], [2])
            log = c.admin.command("testRollbackLog", 1)["rolledBack"]
            self.assertIn({"_id": 1}, [e.get("documentKey") for e in log
                                       if e["ns"] == "outbox_replset." + name])

    def test_majority_read_on_isolated_primary_stops_at_the_cut(self):
        # 6.0 reads "majority" at the member's committed snapshot; a cut-off primary never
        # learns of a newer commit point, so its own later writes stay invisible to it.
        old = self.primary
        name = "cut_%d" % os.getpid()
        with pymongo.MongoClient("mongodb://%s/?replicaSet=rs0&w=majority" % SEED,
                                 serverSelectionTimeoutMS=5000) as client:
            client.outbox_replset[name].insert_one({"_id": 1, "v": 1})
        self.fault(old, "isolate")
        try:
            with direct(old) as c:
                coll = c.outbox_replset.get_collection(
                    name, read_preference=ReadPreference.PRIMARY_PREFERRED)
                coll.update_one({"_id": 1}, {"$set": {"v": 2}})
                coll.insert_one({"_id": 2, "v": 2})
                majority = coll.with_options(read_concern=ReadConcern("majority"))
                self.assertEqual(coll.find_one({"_id": 1})["v"], 2)  # local: its own write
                self.assertEqual(list(majority.find()), [{"_id": 1, "v": 1}])
                self.assertEqual(majority.count_documents({}), 1)
                with self.assertRaises(WTimeoutError) as ctx:
                    coll.with_options(write_concern=WriteConcern("majority", wtimeout=200)
                                      ).insert_one({"_id": 3})
                self.assertEqual(ctx.exception.code, 64)
                self.assertEqual(list(majority.find()), [{"_id": 1, "v": 1}])
            new = self.await_new_primary(old)
            with direct(new) as c:
                c.outbox_replset[name].with_options(
                    write_concern=WriteConcern("majority", wtimeout=5000)).update_one(
                        {"_id": 1}, {"$set": {"v": 3}})
                self.assertEqual(list(c.outbox_replset.get_collection(
                    name, read_concern=ReadConcern("majority")).find()), [{"_id": 1, "v": 3}])
            with direct(old) as c:  # nor does it see the new primary's write
                self.assertEqual(list(c.outbox_replset.get_collection(
                    name, read_preference=ReadPreference.PRIMARY_PREFERRED,
                    read_concern=ReadConcern("majority")).find()), [{"_id": 1, "v": 1}])
        finally:
            self.fault(old, "heal")
        with direct(old) as c:
            coll = c.outbox_replset.get_collection(
                name, read_preference=ReadPreference.SECONDARY_PREFERRED,
                read_concern=ReadConcern("majority"))
            deadline = time.time() + 5
            while list(coll.find()) != [{"_id": 1, "v": 3}] and time.time() < deadline:
                time.sleep(0.05)
            self.assertEqual(list(coll.find()), [{"_id": 1, "v": 3}])

    def test_causal_majority_read_after_own_write_on_isolated_primary_waits(self):
        # 6.0 gives each write on a primary a new optime, replicated or not: the cut-off
        # primary's w:1 write is after the cut, so a causal majority read after it waits for
        # a committed snapshot that never gets there (50), while a local read has it at once.
        # After the rollback, a session gossiping that time to the new primary is served.
        old = self.primary
        name = "causal_cut_%d" % os.getpid()
        with pymongo.MongoClient("mongodb://%s/?replicaSet=rs0&w=majority" % SEED,
                                 serverSelectionTimeoutMS=5000) as client:
            client.outbox_replset[name].insert_one({"_id": 1})
        with direct(old) as c:
            cut = c.admin.command("ping")["operationTime"]
        self.fault(old, "isolate")
        try:
            with direct(old) as c:
                coll = c.outbox_replset.get_collection(
                    name, read_preference=ReadPreference.PRIMARY_PREFERRED)
                with c.start_session(causal_consistency=True) as s:
                    coll.insert_one({"_id": 2}, session=s)
                    written = s.operation_time
                    self.assertGreater(written, cut)
                    self.assertEqual(s.cluster_time["clusterTime"], written)
                    # Local: it applied its own write (a wait would never end: 50).
                    self.assertEqual(coll.find_one({"_id": 2}, session=s, max_time_ms=1000),
                                     {"_id": 2})
                    majority = coll.with_options(read_concern=ReadConcern("majority"))
                    t0 = time.time()
                    with self.assertRaises(ExecutionTimeout) as ctx:
                        list(majority.find({}, session=s, max_time_ms=300))
                    self.assertEqual(ctx.exception.code, 50)
                    self.assertGreater(time.time() - t0, 0.25)
                    branch_cluster_time = s.cluster_time
            new = self.await_new_primary(old)
        finally:
            self.fault(old, "heal")
        with direct(new) as c:
            before = c.admin.command("ping")["$clusterTime"]["clusterTime"]
            coll = c.outbox_replset[name]
            with c.start_session(causal_consistency=True) as s:
                # What a driver that saw the branch gossips: the new primary accepts it.
                s.advance_cluster_time(branch_cluster_time)
                s.advance_operation_time(written)
                self.assertEqual([d["_id"] for d in coll.find({}, session=s)], [1])
                coll.insert_one({"_id": 3}, session=s)
                self.assertGreater(s.operation_time, max(written, before))
            after = c.admin.command("ping")["$clusterTime"]["clusterTime"]
            self.assertGreaterEqual(after, max(written, before))
        with direct(old) as c:  # the branch's write is gone, the new primary's reach it
            coll = c.outbox_replset.get_collection(
                name, read_preference=ReadPreference.SECONDARY_PREFERRED)
            deadline = time.time() + 5
            while sorted(d["_id"] for d in coll.find()) != [1, 3] and time.time() < deadline:
                time.sleep(0.05)
            self.assertEqual(sorted(d["_id"] for d in coll.find()), [1, 3])

    def test_isolated_primary_streams_no_further_than_its_commit_point(self):
        # A write the secondaries apply only after the cut is majority-committed for them,
        # but the cut-off primary never hears of it: neither its stream nor its majority
        # reads show it.
        old = self.primary
        secondaries = [h for h in self.hosts if h != old]
        name = "cut_stream_%d" % os.getpid()
        with direct(old) as c:
            coll = c.outbox_replset.get_collection(
                name, read_preference=ReadPreference.PRIMARY_PREFERRED)
            coll.insert_one({"_id": 0})
            stream = coll.watch(max_await_time_ms=100)
            try:
                for host in secondaries:
                    self.fault(host, "lag", ms=800)
                coll.insert_one({"_id": 1})
                self.fault(old, "isolate")
                time.sleep(1.2)
                with direct(secondaries[0]) as s:  # committed for the others meanwhile
                    self.assertEqual(s.admin.command("replSetGetStatus")["optimes"]
                                     ["lastCommittedOpTime"]["ts"],
                                     s.admin.command("isMaster")["lastWrite"]["opTime"]["ts"])
                self.assertIsNone(stream.try_next())
                majority = coll.with_options(read_concern=ReadConcern("majority"))
                self.assertEqual([d["_id"] for d in majority.find()], [0])
            finally:
                stream.close()
                for host in secondaries:
                    self.fault(host, "lag", ms=-1)
                self.fault(old, "heal")

    def test_freeze_on_primary_is_refused(self):
        with direct(self.primary) as c:
            with self.assertRaises(OperationFailure) as ctx:
                c.admin.command("replSetFreeze", 10)
            self.assertEqual(ctx.exception.code, 95)


    def test_status_has_what_monitoring_reads(self):
        # r6.0 src/mongo/db/repl/topology_coordinator.cpp (prepareStatusResponse) and
        # replication_coordinator_impl.cpp (the optimes): what monitoring tools read.
        import datetime
        from bson.int64 import Int64
        from bson.timestamp import Timestamp
        secondary = next(h for h in self.hosts if h != self.primary)
        with direct(secondary) as c:
            st = c.admin.command("replSetGetStatus")
        self.assertEqual(st["syncSourceHost"], self.primary)
        self.assertEqual(st["syncSourceId"], self.hosts.index(self.primary))
        for name in ("lastCommittedOpTime", "readConcernMajorityOpTime", "appliedOpTime",
                     "durableOpTime"):
            self.assertIsInstance(st["optimes"][name]["ts"], Timestamp, name)
            self.assertIsInstance(st["optimes"][name]["t"], Int64, name)
        for name in ("lastCommittedWallTime", "readConcernMajorityWallTime",
                     "lastAppliedWallTime", "lastDurableWallTime"):
            self.assertIsInstance(st["optimes"][name], datetime.datetime, name)
        for m in st["members"]:
            self.assertIsInstance(m["configVersion"], int, m["name"])
            self.assertIsInstance(m["configTerm"], Int64, m["name"])
            self.assertIn("syncSourceHost", m)
            self.assertIn("syncSourceId", m)
            if m.get("self"):
                self.assertNotIn("pingMs", m)
                continue
            self.assertIsInstance(m["pingMs"], Int64, m["name"])
            self.assertIsInstance(m["lastHeartbeat"], datetime.datetime, m["name"])
            self.assertIsInstance(m["lastHeartbeatRecv"], datetime.datetime, m["name"])
            self.assertIsInstance(m["optimeDurable"]["ts"], Timestamp, m["name"])
            self.assertIsInstance(m["optimeDurableDate"], datetime.datetime, m["name"])
            if m["name"] == self.primary:
                self.assertIsInstance(m["electionTime"], Timestamp)
    def test_config_shows_members_and_election_timeout(self):
        # r6.0 src/mongo/db/repl/repl_set_config.cpp (toBSON): what a tool times a failover by.
        with direct(self.primary) as c:
            cfg = c.admin.command("replSetGetConfig")["config"]
        self.assertEqual(cfg["_id"], "rs0")
        self.assertEqual(sorted(m["host"] for m in cfg["members"]), sorted(self.hosts))
        self.assertEqual([m["_id"] for m in cfg["members"]], list(range(len(self.hosts))))
        settings = cfg["settings"]
        self.assertEqual(settings["heartbeatIntervalMillis"], 2000)
        expected = os.environ.get("OUTBOX_TEST_ELECTION_TIMEOUT_MS")
        if expected:
            self.assertEqual(settings["electionTimeoutMillis"], int(expected))
        else:
            self.assertGreater(settings["electionTimeoutMillis"], 0)

if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    sys.exit(0 if result.wasSuccessful() else 1)
