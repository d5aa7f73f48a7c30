#!/usr/bin/python3
"""Runs MongoDB's unified-format spec tests (CRUD, change streams, transactions).

usage: run.py [-k SUBSTRING] [-v] [FILE.json ...]

The server is OUTBOX_TEST_MONGODB_URI (tests/fixtures/with-servers sets it); the tests are
OUTBOX_SPEC_TESTS or ../shared/mongodb-spec-tests next to the repository. The client is
Debian's pymongo 3.11 (run with /usr/bin/python3) with pymongo.monitoring for expectEvents.

One line per test (PASS / SKIP reason / FAIL reason), then
`conformance: N passed, N failed, N skipped`. Exit 1 on any failure, 77 (meson's skip)
when the spec tests, pymongo or the server address are missing.

Tests are skipped only when runOnRequirements exclude this deployment (topology,
serverless, server version) or when pymongo 3.11 cannot express the test; the reason names
what is missing. A server that is incomplete makes tests fail (see FINDINGS.md).
"""
import argparse
import glob
import os
import signal
import socket
import sys
import time
import traceback
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
SUPPORTED_SCHEMA = (1, 9)
TEST_TIMEOUT_S = 60


def skip_all(message):
    print("conformance: SKIP: %s" % message)
    print("conformance: 0 passed, 0 failed, 0 skipped")
    sys.exit(77)


try:
    import pymongo  # noqa: E402
    from bson import json_util
    from bson.errors import InvalidDocument
    from pymongo.errors import BulkWriteError, NotMasterError, OperationFailure, PyMongoError
    from pymongo.read_concern import ReadConcern
    from pymongo.read_preferences import ReadPreference
    from pymongo.write_concern import WriteConcern
except ImportError as exc:  # pragma: no cover
    skip_all("pymongo is not importable by %s (%s); run with Debian's /usr/bin/python3 "
             "and python3-pymongo" % (sys.executable, exc))

sys.path.insert(0, HERE)
from matching import MatchError, exact_equal, match  # noqa: E402
from operations import (TXN_STATES, DeploymentLacks, DriverCannot, Entities,  # noqa: E402
                        RunnerError, bulk_error_result, run_operation)


class Skip(Exception):
    pass


class TestTimeout(Exception):
    pass


def version_tuple(text):
    parts = [int(p) for p in str(text).split("-")[0].split(".") if p.isdigit()]
    return tuple((parts + [0, 0, 0])[:3])


class Runner:
    def __init__(self, uri):
        self.uri = uri
        # A failpoint's shutdown error (no topologyVersion, as from mongod) marks the server
        # Unknown until the next streaming hello, heartbeatFrequencyMS later: keep it short.
        self.client_defaults = {"serverSelectionTimeoutMS": 10000, "heartbeatFrequencyMS": 500}
        self.internal = pymongo.MongoClient(uri, **self.client_defaults)
        build = self.internal.admin.command("buildInfo")
        self.version_text = build.get("version", "?")
        self.version = version_tuple(self.version_text)
        hello = self.internal.admin.command("isMaster")
        if hello.get("msg") == "isdbgrid":
            self.topology = "sharded"
        elif "serviceId" in hello:
            self.topology = "load-balanced"
        elif "setName" in hello:
            self.topology = "replicaset"
        else:
            self.topology = "single"
        self.multi_uri = self._multi_mongos_uri()
        self.serverless = os.environ.get("OUTBOX_SPEC_SERVERLESS", "") in ("1", "true")
        self.auth = bool(pymongo.uri_parser.parse_uri(uri).get("username"))
        self.params = {}
        self.failpoints = []

    def _multi_mongos_uri(self):
        """A URI naming several mongoses, for clients with useMultipleMongoses (the unified
        format's MULTI_MONGOS_URI): OUTBOX_TEST_MONGODB_MULTI_URI, or every port of
        OUTBOX_TEST_MONGOD_PORT_FILE when test-mongod runs --mongos --mongos-count N; None
        when there is one mongos."""
        if self.topology != "sharded":
            return None
        uri = os.environ.get("OUTBOX_TEST_MONGODB_MULTI_URI")
        if uri:
            return uri
        try:
            with open(os.environ.get("OUTBOX_TEST_MONGOD_PORT_FILE", "")) as f:
                ports = f.read().split()
        except OSError:
            return None
        if len(ports) < 2:
            return None
        host = pymongo.uri_parser.parse_uri(self.uri)["nodelist"][0][0]
        return "mongodb://%s/" % ",".join("%s:%s" % (host, p) for p in ports)

    # -- runOnRequirements -------------------------------------------------------------
    def unmet(self, req):
        """Why one runOnRequirement is not satisfied (None when it is)."""
        if "minServerVersion" in req and self.version < version_tuple(req["minServerVersion"]):
            return "needs server >= %s (server is %s)" % (req["minServerVersion"],
                                                          self.version_text)
        if "maxServerVersion" in req and self.version > version_tuple(req["maxServerVersion"]):
            return "is for servers <= %s only (server is %s)" % (req["maxServerVersion"],
                                                                 self.version_text)
        if "topologies" in req:
            tops = req["topologies"]
            mine = {self.topology}
            if self.topology == "sharded":
                mine.add("sharded-replicaset")
            if not mine & set(tops):
                return "needs topology %s (deployment is a %s)" % (" or ".join(tops),
                                                                   self.topology)
        if "serverless" in req:
            if req["serverless"] == "require" and not self.serverless:
                return "needs Atlas Serverless"
            if req["serverless"] == "forbid" and self.serverless:
                return "must not run on Atlas Serverless"
        if "auth" in req and bool(req["auth"]) != self.auth:
            return "needs auth %s" % ("enabled" if req["auth"] else "disabled")
        if "authMechanism" in req:
            return "needs authMechanism %s (no authentication configured)" % req["authMechanism"]
        if req.get("csfle"):
            return "needs client-side field level encryption (not in pymongo 3.11 here)"
        for name, want in req.get("serverParameters", {}).items():
            if name not in self.params:
                try:
                    self.params[name] = self.internal.admin.command(
                        {"getParameter": 1, name: 1}).get(name)
                except OperationFailure:
                    self.params[name] = None
            try:
                match(want, self.params[name], root=False)
            except MatchError:
                return "needs server parameter %s=%r (server has %r)" % (
                    name, want, self.params[name])
        return None

    def check_requirements(self, reqs):
        if not reqs:
            return None
        reasons = [self.unmet(r) for r in reqs]
        if any(r is None for r in reasons):
            return None
        return "; ".join(sorted(set(reasons)))

    # -- test lifecycle ----------------------------------------------------------------
    def setup_data(self, initial):
        for cd in initial or []:
            db = self.internal.get_database(cd["databaseName"],
                                            write_concern=WriteConcern(w="majority"))
            name = cd["collectionName"]
            db.drop_collection(name)
            opts = cd.get("createOptions")
            if opts is not None or not cd.get("documents"):
                db.command("create", name, **(opts or {}))
            if cd.get("documents"):
                db[name].insert_many(cd["documents"])

    def check_outcome(self, outcome):
        for cd in outcome or []:
            coll = self.internal.get_database(cd["databaseName"]).get_collection(
                cd["collectionName"], read_preference=ReadPreference.PRIMARY,
                read_concern=ReadConcern("local"))
            docs = list(coll.find({}, sort=[("_id", 1)]))
            try:
                exact_equal(cd["documents"], docs)
            except MatchError as exc:
                raise MatchError("outcome %s.%s: %s" % (cd["databaseName"],
                                                         cd["collectionName"], exc))

    def run_test(self, spec, test):
        if test.get("skipReason"):
            raise Skip("test file says: %s" % test["skipReason"])
        for reqs in (spec.get("runOnRequirements"), test.get("runOnRequirements")):
            reason = self.check_requirements(reqs)
            if reason:
                raise Skip(reason)
        prescan_driver_limits(test)
        self.kill_all_sessions()
        self.setup_data(spec.get("initialData"))
        entities = Entities(self)
        failpoints = self.failpoints = []
        ops = test["operations"]
        try:
            entities.create(spec.get("createEntities", []),
                            any(o["name"] == "failPoint" for o in ops))
            for index, op in enumerate(ops):
                try:
                    self.run_one(entities, op, failpoints)
                except (MatchError, AssertionError) as exc:
                    raise MatchError("operation %d (%s): %s" % (index, op["name"], exc))
            for listener in entities.listeners.values():
                listener.enabled = False
            self.disable_failpoints(failpoints)
            failpoints = []
            check_events(test.get("expectEvents"), entities)
            self.check_outcome(test.get("outcome"))
        finally:
            for listener in entities.listeners.values():
                listener.enabled = False
            self.disable_failpoints(failpoints)
            entities.close()

    def kill_all_sessions(self):
        """Ends transactions a failed test left open (they would block its collections)."""
        try:
            self.internal.admin.command({"killAllSessions": []})
        except OperationFailure as exc:
            if exc.code not in (11601, 13):
                raise

    def disable_failpoints(self, failpoints):
        for client, name in failpoints:
            for c in (client, self.internal):
                try:
                    c.admin.command({"configureFailPoint": name, "mode": "off"})
                    break
                except PyMongoError:
                    continue

    def run_one(self, entities, op, failpoints, propagate=False):
        """Runs one operation and checks its expectations. `propagate` (operations of a
        withTransaction callback): an error is raised again once checked."""
        if op["object"] == "testRunner":
            self.special(entities, op, self.failpoints if failpoints is None else failpoints)
            return
        expect_error = op.get("expectError")
        try:
            result = run_operation(self, entities, op)
        except (DriverCannot, RunnerError, TestTimeout):
            raise
        except (PyMongoError, InvalidDocument, ValueError, TypeError) as err:
            if "hint is unsupported for unacknowledged writes" in str(err):
                raise DriverCannot("pymongo 3.11 refuses `hint` on unacknowledged writes")
            if "must not start with '$'" in str(err) or "must not contain '.'" in str(err):
                raise DriverCannot("pymongo 3.11 refuses to send field names that start "
                                   "with '$' or contain '.'")
            if not op.get("ignoreResultAndError"):
                if expect_error is None:
                    raise AssertionError("unexpected error %s: %s" % (type(err).__name__,
                                                                       describe_error(err)))
                check_error(expect_error, err, entities)
            if propagate:
                raise
            return
        if op.get("ignoreResultAndError"):
            return
        if expect_error is not None:
            raise AssertionError("expected an error %s, got result %s" % (
                json_util.dumps(expect_error), safe_dumps(result)))
        if "expectResult" in op:
            expected = op["expectResult"]
            if isinstance(expected, list) and isinstance(result, list) and op["name"] in (
                    "find", "aggregate", "listCollections", "listDatabases", "listIndexes"):
                if len(expected) != len(result):
                    raise MatchError("expected %d documents, got %d: %s" % (
                        len(expected), len(result), safe_dumps(result)))
                for i, (e, a) in enumerate(zip(expected, result)):
                    match(e, a, entities, root=True, path="$[%d]" % i)
            else:
                match(expected, result, entities, root=True)
        if "saveResultAsEntity" in op:
            entities.add(op["saveResultAsEntity"], result)

    def special(self, entities, op, failpoints):
        args = op.get("arguments", {})
        name = op["name"]
        if name == "failPoint":
            client = entities.get(args["client"])
            client.admin.command(args["failPoint"])
            failpoints.append((client, args["failPoint"]["configureFailPoint"]))
        elif name in ("assertCollectionExists", "assertCollectionNotExists"):
            names = self.internal[args["databaseName"]].list_collection_names()
            if (args["collectionName"] in names) != (name == "assertCollectionExists"):
                raise AssertionError("%s %s.%s" % (name, args["databaseName"],
                                                   args["collectionName"]))
        elif name in ("assertIndexExists", "assertIndexNotExists"):
            coll = self.internal[args["databaseName"]][args["collectionName"]]
            names = [ix["name"] for ix in coll.list_indexes()]
            if (args["indexName"] in names) != (name == "assertIndexExists"):
                raise AssertionError("%s %s" % (name, args["indexName"]))
        elif name == "targetedFailPoint":
            # One server, no mongos to pin to: the session's own client sets the fail point.
            client = entities.get(args["session"]).client
            client.admin.command(args["failPoint"])
            failpoints.append((client, args["failPoint"]["configureFailPoint"]))
        elif name == "createEntities":
            entities.create(args["entities"], False)
        else:
            self.session_assertion(entities, name, args)

    def session_assertion(self, entities, name, args):
        session = entities.get(args.get("session")) if "session" in args else None
        if name == "assertSessionTransactionState":
            state = TXN_STATES.get(session._transaction.state)
            if state != args["state"]:
                raise AssertionError("session %s is in transaction state %s, expected %s" % (
                    args["session"], state, args["state"]))
        elif name in ("assertSessionPinned", "assertSessionUnpinned"):
            # Sessions are pinned to a mongos only; a replica set never pins one.
            if name == "assertSessionPinned":
                raise AssertionError("session %s is not pinned (not a sharded cluster)"
                                     % args["session"])
        elif name in ("assertSessionDirty", "assertSessionNotDirty"):
            dirty = bool(session._server_session.dirty)
            if dirty != (name == "assertSessionDirty"):
                raise AssertionError("%s: session %s dirty=%s" % (name, args["session"], dirty))
        elif name in ("assertSameLsidOnLastTwoCommands",
                      "assertDifferentLsidOnLastTwoCommands"):
            started = [e for kind, e in entities.listeners[args["client"]].events
                       if kind == "commandStartedEvent"]
            if len(started) < 2:
                raise AssertionError("%s: fewer than two commands observed" % name)
            same = started[-1].command.get("lsid") == started[-2].command.get("lsid")
            if same != (name == "assertSameLsidOnLastTwoCommands"):
                raise AssertionError("%s: lsids %s and %s" % (
                    name, started[-2].command.get("lsid"), started[-1].command.get("lsid")))
        else:
            raise RunnerError("special operation %s not implemented" % name)


WRITE_COMMANDS = ("insert", "update", "delete", "findAndModify")


def starts_transaction(cmd):
    return cmd.get("startTransaction") is True


def prescan_driver_limits(test):
    """Test expectations that pymongo 3.11's own command construction cannot meet."""
    for op in test.get("operations", []):
        data = op.get("arguments", {}).get("failPoint", {}).get("data", {})
        if "writeConcernError" in data and data.get("errorLabels"):
            raise DriverCannot("pymongo 3.11 reads the errorLabels of a reply with a "
                               "writeConcernError only inside that document; mongod puts them "
                               "at the reply's top level (later pymongo merges them)")
    for exp in test.get("expectEvents", []):
        for ev in exp.get("events", []):
            cmd = ev.get("commandStartedEvent", {}).get("command", {})
            rc = cmd.get("readConcern")
            if (any(w in cmd for w in WRITE_COMMANDS) and not starts_transaction(cmd) and
                    isinstance(rc, dict) and "afterClusterTime" in rc):
                raise DriverCannot("pymongo 3.11 does not send readConcern.afterClusterTime "
                                   "on writes outside transactions in causally consistent "
                                   "sessions (DRIVERS-3274, 2025)")
            if "getMore" in cmd and "comment" in cmd:
                raise DriverCannot("pymongo 3.11 does not send `comment` on getMore "
                                   "(only on the initial command)")
            if "find" in cmd and "limit" in cmd and cmd.get("batchSize") == cmd["limit"] + 1:
                raise DriverCannot("pymongo 3.11 sends find batchSize=min(batchSize, limit); "
                                   "the test expects limit+1 (later drivers)")


def safe_dumps(value):
    try:
        return json_util.dumps(value)[:400]
    except Exception:  # noqa: BLE001
        return repr(value)[:400]


def describe_error(err):
    details = getattr(err, "details", None)
    if isinstance(details, dict) and not isinstance(err, BulkWriteError):
        return "code %s %s: %s%s" % (
            details.get("code"), details.get("codeName"), details.get("errmsg"),
            " labels %s" % details["errorLabels"] if details.get("errorLabels") else "")
    if details:
        return "%s %s" % (str(err).split(", full error")[0], safe_dumps(details))
    return str(err)


def server_reply_error(err):
    """pymongo 3.11 raises a server's NotWritablePrimary reply (10107, 13435, ...) as
    NotMasterError, an AutoReconnect: it is still the server's error, with its code."""
    return isinstance(err, NotMasterError) and isinstance(getattr(err, "details", None), dict)


def error_codes(err):
    codes = []
    if server_reply_error(err):
        codes.append(err.details.get("code"))
    if isinstance(err, OperationFailure):
        codes.append(err.code)
        if isinstance(err, BulkWriteError):
            codes += [we.get("code") for we in err.details.get("writeErrors", [])]
            codes += [wc.get("code") for wc in err.details.get("writeConcernErrors", [])]
    return codes


def check_error(exp, err, entities):
    is_server = isinstance(err, OperationFailure) or server_reply_error(err)
    desc = "%s: %s" % (type(err).__name__, describe_error(err))
    if "isClientError" in exp and exp["isClientError"] == is_server:
        raise AssertionError("expected a %s error, got %s" % (
            "client" if exp["isClientError"] else "server", desc))
    if exp.get("isTimeoutError"):
        raise DriverCannot("pymongo 3.11 has no client-side operation timeout (timeoutMS)")
    if "errorContains" in exp:
        text = str(err)
        details = getattr(err, "details", None) or {}
        text += " " + str(details.get("errmsg", ""))
        for we in details.get("writeErrors", []) if isinstance(details, dict) else []:
            text += " " + str(we.get("errmsg", ""))
        if exp["errorContains"].lower() not in text.lower():
            raise AssertionError("error does not contain %r: %s" % (exp["errorContains"], desc))
    if "errorCode" in exp and exp["errorCode"] not in error_codes(err):
        raise AssertionError("expected error code %s, got %s" % (exp["errorCode"], desc))
    if "errorCodeName" in exp:
        details = getattr(err, "details", None) or {}
        names = [details.get("codeName")]
        names += [we.get("codeName") for we in details.get("writeErrors", [])]
        if exp["errorCodeName"].lower() not in [str(n).lower() for n in names if n]:
            raise AssertionError("expected codeName %s, got %s" % (exp["errorCodeName"], desc))
    for label in exp.get("errorLabelsContain", []):
        if not (hasattr(err, "has_error_label") and err.has_error_label(label)):
            raise AssertionError("expected error label %s, got %s (labels %s)" % (
                label, desc, sorted(getattr(err, "_error_labels", []))))
    for label in exp.get("errorLabelsOmit", []):
        if hasattr(err, "has_error_label") and err.has_error_label(label):
            raise AssertionError("error label %s must be absent: %s" % (label, desc))
    if "errorResponse" in exp:
        match(exp["errorResponse"], getattr(err, "details", None), entities, root=True)
    if "expectResult" in exp:
        if not isinstance(err, BulkWriteError):
            raise AssertionError("expected a result with the error, got %s" % desc)
        match(exp["expectResult"], bulk_error_result(err), entities, root=True)
    for key in exp:
        if key not in ("isError", "isClientError", "isTimeoutError", "errorContains",
                       "errorCode", "errorCodeName", "errorLabelsContain", "errorLabelsOmit",
                       "errorResponse", "expectResult"):
            raise RunnerError("expectError.%s not implemented" % key)


def check_events(expect_events, entities):
    for exp in expect_events or []:
        if exp.get("eventType", "command") != "command":
            raise RunnerError("eventType %s not implemented" % exp["eventType"])
        listener = entities.listeners.get(exp["client"])
        if listener is None:
            raise RunnerError("no event listener on client %s" % exp["client"])
        actual = listener.events
        expected = exp["events"]
        names = ", ".join("%s:%s" % (k[7:-5], e.command_name) for k, e in actual)
        if len(actual) < len(expected) or (
                not exp.get("ignoreExtraEvents") and len(actual) != len(expected)):
            raise MatchError("client %s: expected %d events, observed %d [%s]" % (
                exp["client"], len(expected), len(actual), names))
        for i, (e, (kind, event)) in enumerate(zip(expected, actual)):
            (etype, body), = e.items()
            where = "event %d (%s)" % (i, event.command_name)
            if etype != kind:
                raise MatchError("%s: expected %s, observed %s [%s]" % (where, etype, kind,
                                                                        names))
            try:
                for key, value in body.items():
                    if key == "command":
                        match(value, event.command, entities, root=True, path="command")
                    elif key == "reply":
                        match(value, event.reply, entities, root=True, path="reply")
                    elif key == "commandName":
                        if event.command_name != value:
                            raise MatchError("commandName %s != %s" % (event.command_name,
                                                                       value))
                    elif key == "databaseName":
                        if event.database_name != value:
                            raise MatchError("databaseName %s != %s" % (
                                event.database_name, value))
                    elif key == "hasServiceId":
                        if bool(value):
                            raise MatchError("expected a serviceId (not load balanced)")
                    else:
                        raise RunnerError("event assertion %s not implemented" % key)
            except MatchError as exc:
                raise MatchError("%s: %s" % (where, exc))


def server_reachable(uri):
    host, port = pymongo.uri_parser.parse_uri(uri)["nodelist"][0]
    try:
        socket.create_connection((host, port), timeout=2).close()
        return True
    except OSError:
        return False


def on_alarm(signum, frame):
    raise TestTimeout("test did not finish within %d s" % TEST_TIMEOUT_S)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="*", help="spec test files (default: crud, change-streams, "
                                             "transactions)")
    ap.add_argument("-k", dest="pattern", help="only tests whose 'file: description' "
                                               "contains this text")
    ap.add_argument("-v", dest="verbose", action="store_true", help="tracebacks on failure")
    ap.add_argument("--areas", default="crud,change-streams,transactions",
                    help="the spec folders run when no file is given (comma-separated)")
    opts = ap.parse_args()

    spec_dir = os.environ.get("OUTBOX_SPEC_TESTS") or os.path.join(
        REPO, "..", "shared", "mongodb-spec-tests")
    files = opts.files
    if not files:
        if not os.path.isdir(spec_dir):
            skip_all("spec tests not found at %s (set OUTBOX_SPEC_TESTS or provide "
                     "../shared/mongodb-spec-tests)" % os.path.normpath(spec_dir))
        files = sorted(f for area in opts.areas.split(",")
                       for f in glob.glob(os.path.join(spec_dir, area, "*.json")))
        if not files:
            skip_all("no JSON tests under %s" % spec_dir)
    uri = os.environ.get("OUTBOX_TEST_MONGODB_URI")
    if not uri:
        skip_all("OUTBOX_TEST_MONGODB_URI is not set (run under tests/fixtures/with-servers)")

    warnings.simplefilter("ignore", DeprecationWarning)
    signal.signal(signal.SIGALRM, on_alarm)
    try:
        runner = Runner(uri)
    except PyMongoError as exc:
        print("conformance: cannot talk to %s: %s" % (uri, exc))
        print("conformance: 0 passed, 1 failed, 0 skipped")
        return 1
    print("conformance: pymongo %s, server %s (%s), %s" % (
        pymongo.version, runner.version_text, runner.topology, uri))
    counts = {"PASS": 0, "FAIL": 0, "SKIP": 0}
    started = time.monotonic()
    gone = False
    for path in files:
        if gone:
            break
        short = os.path.join(os.path.basename(os.path.dirname(path)), os.path.basename(path))
        with open(path) as fh:
            spec = json_util.loads(fh.read())
        schema = version_tuple(spec.get("schemaVersion", "0"))
        for test in spec["tests"]:
            label = "%s: %s" % (short, test["description"])
            if opts.pattern and opts.pattern not in label:
                continue
            status, reason = "PASS", ""
            t0 = time.monotonic()
            signal.alarm(TEST_TIMEOUT_S)
            try:
                if schema[0] != SUPPORTED_SCHEMA[0] or schema[:2] > SUPPORTED_SCHEMA:
                    raise RunnerError("schemaVersion %s not supported (runner: up to %d.%d)"
                                      % (spec.get("schemaVersion"), *SUPPORTED_SCHEMA))
                runner.run_test(spec, test)
            except (Skip, DriverCannot, DeploymentLacks) as exc:
                status, reason = "SKIP", str(exc)
            except (MatchError, AssertionError) as exc:
                status, reason = "FAIL", str(exc)
            except Exception as exc:  # noqa: BLE001 - any error fails the test
                status, reason = "FAIL", "%s: %s" % (type(exc).__name__, exc)
                if opts.verbose:
                    traceback.print_exc()
            finally:
                signal.alarm(0)
            if status == "FAIL" and not server_reachable(uri):
                reason += " (the server no longer accepts connections: remaining tests not run)"
                gone = True
            counts[status] += 1
            took = time.monotonic() - t0
            line = "%s %s" % (status, label)
            if reason:
                line += " -- " + reason.replace("\n", " ")
            if took > 2:
                line += " (%.1fs)" % took
            print(line, flush=True)
            if gone:
                break
    runner.internal.close()
    print("conformance: %d tests in %.1f s against %s" % (
        sum(counts.values()), time.monotonic() - started, runner.version_text))
    print("conformance: %d passed, %d failed, %d skipped" % (
        counts["PASS"], counts["FAIL"], counts["SKIP"]))
    return 1 if counts["FAIL"] else 0


if __name__ == "__main__":
    sys.exit(main())
