# Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
"""The chaos suite's machinery: processes that are always cleaned up, the servers
(test-mongod, mosquitto), the relay, the writers, the verifying subscriber and the ledger
of what was committed."""

import atexit
import getpass
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid

try:
    import pymongo
    from bson.codec_options import CodecOptions
    import paho.mqtt.client as mqtt
    from paho.mqtt.properties import Properties
    from paho.mqtt.packettypes import PacketTypes
except ImportError as exc:  # pragma: no cover
    print("chaos: needs Debian's python3-pymongo and python3-paho-mqtt; run it with "
          "/usr/bin/python3 (%s)" % exc, file=sys.stderr)
    sys.exit(77)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures"))
from deployment import DB_PREFIX, Skip, requires  # noqa: E402,F401 (chaos.py catches Skip)

# scripts/test --against URI: scenarios run against that deployment instead of a test-mongod
# of their own, where they can (deployment.requires() says why not).
EXTERNAL_URI = os.environ.get("OUTBOX_TEST_MONGODB_URI", "")

# ---------------------------------------------------------------------------------------------
# Processes: every child gets its own process group and is killed when we exit, however we
# exit (normal end, exception, SIGTERM from meson's timeout, Ctrl-C).

_children = []
_children_lock = threading.Lock()


def spawn(args, log_path=None, stdout=None, env=None):
    """Starts a process in its own session (so a kill reaches its whole group)."""
    out = stdout
    log = None
    if out is None and log_path:
        log = open(log_path, "ab")
        out = log
    proc = subprocess.Popen(args, stdout=out or subprocess.DEVNULL,
                            stderr=log if log else subprocess.DEVNULL,
                            start_new_session=True, env=env)
    if log:
        log.close()  # the child has its own copy
    with _children_lock:
        _children.append(proc)
    return proc


def kill_group(proc, sig=signal.SIGKILL):
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            pass
    if sig == signal.SIGKILL:
        remove_mongoc_shm(proc)


def remove_mongoc_shm(proc):
    """A SIGKILLed mongoc program leaves /dev/shm/mongoc-<pid> behind; a later process that
    gets the same pid then warns on stderr before main(). Clean up after the kill."""
    try:
        proc.wait(5)
        os.unlink("/dev/shm/mongoc-%d" % proc.pid)
    except (OSError, subprocess.TimeoutExpired):
        pass


def stop(proc, timeout=10.0, sig=signal.SIGTERM):
    """SIGTERM, wait, then SIGKILL. Returns the exit status."""
    if proc.poll() is None:
        kill_group(proc, sig)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            kill_group(proc, signal.SIGKILL)
            proc.wait()
    with _children_lock:
        if proc in _children:
            _children.remove(proc)
    return proc.returncode


def _kill_everything():
    with _children_lock:
        procs = list(_children)
        _children.clear()
    for proc in procs:
        kill_group(proc, signal.SIGKILL)
    for proc in procs:
        try:
            proc.wait(5)
        except Exception:
            pass


def _on_signal(signum, frame):
    _kill_everything()
    sys.exit(128 + signum)


atexit.register(_kill_everything)
signal.signal(signal.SIGTERM, _on_signal)
signal.signal(signal.SIGHUP, _on_signal)


TIMELINE = []


def mark(what):
    """Notes a harness action with its time (written to timeline.txt after a failure)."""
    TIMELINE.append("%.3f %s" % (time.time(), what))


def wait_until(pred, timeout=30.0, step=0.1):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if pred():
            return True
        time.sleep(step)
    return pred()


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def port_open(port):
    try:
        socket.create_connection(("127.0.0.1", port), 0.2).close()
        return True
    except OSError:
        return False


# ---------------------------------------------------------------------------------------------
# Servers


class Mongod:
    """test-mongod on a free port (or a given one); with members > 1 a replica set whose
    members are on free ports (`ports`), with test commands (faults, clocks, rollback log);
    with shards > 0 a mongos in front of that many shards, each ticking its clock every
    noop_ms when idle (--periodic-noop-ms)."""

    def __init__(self, binary, workdir, oplog_size=None, port=0, members=1,
                 election_timeout_ms=1000, shards=0, noop_ms=200):
        self.binary, self.workdir, self.oplog_size = binary, workdir, oplog_size
        self.shards, self.noop_ms = shards, noop_ms
        self.port = port
        self.members, self.election_timeout_ms = members, election_timeout_ms
        self.ports = [port]
        self.proc = None
        self.start()
        self.client = pymongo.MongoClient(self.uri, serverSelectionTimeoutMS=10000)

    @property
    def uri(self):
        """What writers, relays and the verifier use: the one member, or every member of the
        set as seeds (drivers follow the primary)."""
        if self.members == 1:
            return "mongodb://127.0.0.1:%d/?directConnection=true" % self.port
        return "mongodb://%s/?replicaSet=rs0" % ",".join(self.hosts())

    def hosts(self):
        return ["127.0.0.1:%d" % p for p in self.ports]

    def member_uri(self, i):
        """A direct connection to member i: it stays there whatever its role."""
        return "mongodb://127.0.0.1:%d/?directConnection=true" % self.ports[i]

    def start(self):
        port_file = os.path.join(self.workdir, "mongod.port")
        if os.path.exists(port_file):
            os.unlink(port_file)
        args = [self.binary, "--port", str(self.port), "--port-file", port_file]
        if self.oplog_size:
            args += ["--oplog-size", str(self.oplog_size)]
        if self.members > 1:
            args += ["--members", str(self.members), "--enable-test-commands",
                     "--election-timeout-ms", str(self.election_timeout_ms)]
        if self.shards:
            args += ["--mongos", "--shards", str(self.shards), "--periodic-noop-ms",
                     str(self.noop_ms)]
        self.proc = spawn(args, os.path.join(self.workdir, "mongod.log"))
        if not wait_until(lambda: os.path.exists(port_file) and
                          len(open(port_file).read().split()) == self.members, 15, 0.05):
            raise RuntimeError("test-mongod did not start")
        self.ports = [int(p) for p in open(port_file).read().split()]
        self.port = self.ports[0]

    def failpoint(self, mode, data, name="failCommand"):
        mark("failpoint %s %s %s" % (name, mode, data))
        self.client.admin.command("configureFailPoint", name, mode=mode, data=data)

    def failpoint_off(self, name="failCommand"):
        self.client.admin.command("configureFailPoint", name, mode="off")

    def close(self):
        self.client.close()
        if self.proc:
            stop(self.proc)


class External:
    """The deployment of OUTBOX_TEST_MONGODB_URI in Mongod's place: never started, stopped or
    restarted here. reset() empties the scenario's database (DB: the run's own) so each
    scenario starts from nothing, as with a server of its own."""

    def __init__(self, uri):
        self.uri = uri
        self.proc = None
        self.client = pymongo.MongoClient(uri, serverSelectionTimeoutMS=20000)
        self.members = len(self.hosts()) or 1

    def hosts(self):
        return list(self.client.admin.command("ismaster").get("hosts", []))

    def member_uri(self, i):
        return "mongodb://%s/?directConnection=true" % self.hosts()[i]

    def reset(self):
        self.client.drop_database(DB)

    failpoint = Mongod.failpoint
    failpoint_off = Mongod.failpoint_off

    def undo_faults(self):
        """Heals, resumes and sets right every member test-mongod's faults may have left
        cut off, paused, lagging or with its clock off (a scenario that failed half way),
        then waits for a primary: the deployment outlives the scenario. Best effort: a
        deployment without testMemberFault has nothing to undo."""
        hosts = self.hosts()
        for host in hosts:
            for mode, kw in (("heal", {}), ("resume", {}), ("clock", {"ms": 0}),
                             ("lag", {"ms": -1})):
                for via in hosts:
                    try:
                        with pymongo.MongoClient("mongodb://%s/?directConnection=true" % via,
                                                 serverSelectionTimeoutMS=2000) as c:
                            c.admin.command("testMemberFault", host, mode=mode, **kw)
                        break
                    except pymongo.errors.PyMongoError:
                        continue
        if hosts:
            wait_until(lambda: self.client.admin.command("ismaster").get("primary"), 30)

    def close(self):
        self.undo_faults()
        self.reset()
        self.client.close()


MOSQUITTO = shutil.which("mosquitto") or "/usr/sbin/mosquitto"


class Broker:
    """mosquitto with persistence (a subscriber's session and queue survive a restart)."""

    def __init__(self, workdir, extra_conf="", port=None):
        self.workdir = workdir
        self.port = port or free_port()
        self.conf = os.path.join(workdir, "mosquitto.conf")
        with open(self.conf, "w") as f:
            f.write("listener %d 127.0.0.1\nallow_anonymous true\npersistence true\n"
                    "persistence_location %s/\nmax_queued_messages 0\nmax_queued_bytes 0\n"
                    "log_dest stderr\nuser %s\n%s" %
                    (self.port, workdir, getpass.getuser(), extra_conf))
        self.proc = None
        self.restarts = 0
        self.start()

    @property
    def uri(self):
        return "tcp://127.0.0.1:%d" % self.port

    def start(self):
        for _ in range(3):
            self.proc = spawn([MOSQUITTO, "-c", self.conf],
                              os.path.join(self.workdir, "mosquitto.log"))
            if wait_until(lambda: port_open(self.port) or self.proc.poll() is not None, 10, 0.05) \
                    and self.proc.poll() is None:
                return
            stop(self.proc)
            time.sleep(0.5)  # the port may still be in TIME_WAIT use by the old broker
        raise RuntimeError("mosquitto did not start on port %d" % self.port)

    def stop(self):
        if self.proc:
            stop(self.proc)
            self.proc = None

    def restart(self, down_seconds=0.5):
        mark("broker stop")
        self.stop()
        time.sleep(down_seconds)
        self.start()
        mark("broker started")
        self.restarts += 1

    def close(self):
        self.stop()


# ---------------------------------------------------------------------------------------------
# The relay


class Relay:
    counter = 0

    def __init__(self, binary, workdir, mongo_uri, mqtt_uri, db, colls, name="chaos",
                 extra=(), log_level="info", env=None):
        Relay.counter += 1
        self.log_path = os.path.join(workdir, "relay-%d.log" % Relay.counter)
        args = [binary, "--mongodb-uri", mongo_uri, "--database", db, "--mqtt-uri", mqtt_uri,
                "--name", name, "--metrics-listen", "off", "--log-level", log_level,
                "--checkpoint-interval-ms", "200", "--reconnect-min-ms", "50",
                "--reconnect-max-ms", "500"]
        for c in colls:
            args += ["--collection", c]
        args += list(extra)
        wrapper = os.environ.get("CHAOS_RELAY_WRAPPER")
        if wrapper:  # e.g. "gdb -q -batch -ex run -ex bt --args" for a crash's backtrace
            args = wrapper.split() + args
        self.args = args
        self.killed = False   # told to end (SIGTERM or SIGKILL) by the harness
        self.kill9ed = False  # ended with SIGKILL on purpose: no clean exit expected
        self.proc = spawn(args, self.log_path, env=env)
        mark("relay %d started (pid %d)" % (Relay.counter, self.proc.pid))

    @property
    def pid(self):
        return self.proc.pid

    def alive(self):
        return self.proc.poll() is None

    def log_text(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def wait_log(self, text, timeout=20):
        return wait_until(lambda: text in self.log_text() or not self.alive(), timeout) \
            and text in self.log_text()

    def died(self):
        """The exit status if the relay ended without being told to, else None."""
        if self.killed or self.proc.poll() is None:
            return None
        return self.proc.returncode

    def sanitizer_report(self):
        """The first sanitizer report in the relay's log (ASan, LSan at exit, UBSan), or
        None. Only a relay that exits normally runs LeakSanitizer, so stop() uses SIGTERM."""
        text = self.log_text()
        for marker in ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:"):
            if marker in text:
                at = text.index(marker)
                return "%s in %s:\n%s" % (marker, self.log_path, text[at:at + 3000])
        return None

    def kill9(self):
        self.killed = True
        self.kill9ed = True
        mark("relay pid %d kill -9" % self.proc.pid)
        kill_group(self.proc, signal.SIGKILL)
        self.proc.wait()
        stop(self.proc)

    def stop(self, timeout=30):
        """SIGTERM; if the relay does not exit in time, saves its thread stacks (gdb) next to
        its log before killing it, since a hung relay is a finding."""
        if self.proc.poll() is None:
            self.killed = True
            kill_group(self.proc, signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                path = self.save_stacks()
                print("  relay pid %d ignored SIGTERM for %ds%s" %
                      (self.pid, timeout, "; stacks in " + path if path else ""), flush=True)
        return stop(self.proc, 5)

    def save_stacks(self):
        if not shutil.which("gdb") or self.proc.poll() is not None:
            return None
        path = self.log_path + ".stacks"
        with open(path, "wb") as f:
            try:
                subprocess.run(["gdb", "-p", str(self.pid), "-batch", "-ex",
                                "thread apply all bt"], stdout=f, stderr=f, timeout=60)
            except subprocess.TimeoutExpired:
                pass
        return path

    def proc_status(self, key):
        """A field of /proc/PID/status in kB (VmRSS, VmHWM), or None."""
        try:
            with open("/proc/%d/status" % self.pid) as f:
                for line in f:
                    if line.startswith(key + ":"):
                        return int(line.split()[1])
        except OSError:
            return None
        return None

    def fd_count(self):
        try:
            return len(os.listdir("/proc/%d/fd" % self.pid))
        except OSError:
            return None


# ---------------------------------------------------------------------------------------------
# Writers and the ledger of what they committed


class Writer:
    """One chaos-writer process; its stdout (attempts and commits) goes to a file."""

    counter = 0

    def __init__(self, binary, workdir, mongo_uri, db, coll, prefix, first, count, events,
                 max_per=3, delay_us=0, seed=None):
        Writer.counter += 1
        self.out_path = os.path.join(workdir, "writer-%d.out" % Writer.counter)
        self.coll = coll
        out = open(self.out_path, "wb")
        args = [binary, mongo_uri, db, coll, prefix, str(first), str(count), str(events),
                str(max_per), str(seed if seed is not None else random.randrange(1 << 30)),
                str(delay_us)]
        self.proc = subprocess.Popen(args, stdout=out, stderr=open(self.out_path + ".err", "wb"),
                                     start_new_session=True)
        out.close()
        with _children_lock:
            _children.append(self.proc)

    def wait(self, timeout=None):
        try:
            self.proc.wait(timeout)
        finally:
            if self.proc.poll() is not None:
                stop(self.proc)
        return self.proc.returncode

    def kill9(self):
        kill_group(self.proc, signal.SIGKILL)
        self.proc.wait()
        stop(self.proc)

    def stderr(self):
        with open(self.out_path + ".err", "rb") as f:
            return f.read().decode("utf-8", "replace")


class Ledger:
    """What the writers committed (C lines) and what they tried but did not confirm
    (T lines without their C lines: the writer was killed in between)."""

    def __init__(self):
        self.committed = {}    # event id -> (collection, entity, seq)
        self.unconfirmed = []  # [(collection, entity, [ids])]
        self.redefined = 0     # an id committed twice with different seqs

    def add_writer(self, writer):
        with open(writer.out_path, "rb") as f:
            data = f.read().decode("utf-8", "replace")
        lines = data.split("\n")
        if not data.endswith("\n"):
            lines = lines[:-1]  # killed in the middle of a line
        attempt = None
        for line in lines:
            parts = line.split(" ")
            if parts[0] == "T" and len(parts) == 3:
                if attempt and attempt[2]:
                    self.unconfirmed.append(attempt)
                attempt = (writer.coll, parts[1], parts[2].split(","))
            elif parts[0] == "C" and len(parts) == 4:
                key = parts[3]
                val = (writer.coll, parts[1], int(parts[2]))
                if key in self.committed and self.committed[key] != val:
                    self.redefined += 1
                self.committed[key] = val
                if attempt and key in attempt[2]:
                    attempt[2].remove(key)
                    if not attempt[2]:
                        attempt = None
        if attempt and attempt[2]:
            self.unconfirmed.append(attempt)

    def add_direct(self, coll, entity, seq, eid):
        """An event written by the harness itself (pymongo), not by a writer."""
        self.committed[eid] = (coll, entity, seq)

    def entities(self):
        return {(c, e) for c, e, _ in self.committed.values()}


# ---------------------------------------------------------------------------------------------
# The verifying subscriber


class Subscriber:
    """Subscribed (QoS 1, MQTT 5, persistent session) before anything starts, and always
    reconnecting; keeps every message in arrival order. Subclasses (the other brokers'
    subscriber, tests/brokers/otherbrokers.py) change how the client is made and connects
    through _new_client() and _connect(), and keep the rest."""

    subscribe_timeout = 10

    def __init__(self, broker, topic_filter="outbox/#"):
        self.lock = threading.Lock()
        self.messages = []  # (topic, payload bytes, arrival time)
        self.subscribed = threading.Event()
        self.filter = topic_filter
        self.client = self._new_client()
        self.client.on_message = self._on_message
        self.client.on_connect = self._on_connect
        self.client.on_subscribe = lambda *a, **k: self.subscribed.set()
        self.client.reconnect_delay_set(min_delay=1, max_delay=1)
        self._connect(broker)
        self.client.loop_start()
        if not self.subscribed.wait(self.subscribe_timeout):
            self.close()
            raise RuntimeError("the subscriber could not subscribe to %s" %
                               getattr(broker, "name", "the broker"))

    def _new_client(self):
        return mqtt.Client(client_id="chaos-sub-%s" % uuid.uuid4().hex[:10],
                           protocol=mqtt.MQTTv5)

    def _connect(self, broker):
        props = Properties(PacketTypes.CONNECT)
        props.SessionExpiryInterval = 86400
        self.client.connect("127.0.0.1", broker.port, keepalive=30, clean_start=False,
                            properties=props)

    def _on_connect(self, client, userdata, flags, rc, properties=None):
        client.subscribe(self.filter, qos=1)

    def _on_message(self, client, userdata, msg):
        with self.lock:
            self.messages.append((msg.topic, msg.payload, time.time()))

    def count(self):
        with self.lock:
            return len(self.messages)

    def snapshot(self):
        with self.lock:
            return list(self.messages)

    def wait_silence(self, quiet=1.5, timeout=60):
        """Waits until no message arrived for `quiet` seconds."""
        deadline = time.time() + timeout
        last, since = -1, time.time()
        while time.time() < deadline:
            n = self.count()
            if n != last:
                last, since = n, time.time()
            elif time.time() - since >= quiet:
                return True
            time.sleep(0.1)
        return False

    def close(self):
        self.client.loop_stop()
        try:
            self.client.disconnect()
        except Exception:
            pass


# ---------------------------------------------------------------------------------------------
# Verification


# Documents may hold invalid UTF-8 on purpose (bad-input scenarios).
LENIENT = CodecOptions(unicode_decode_error_handler="replace")


def pending_events(db, colls, field="events"):
    """{event id: (collection, entity id)} of every event still in a document."""
    out = {}
    for c in colls:
        coll = db[c].with_options(codec_options=LENIENT)
        for d in coll.find({field + ".0": {"$exists": True}}, {field: 1}):
            evs = d.get(field)
            if isinstance(evs, list):
                for e in evs:
                    if isinstance(e, dict) and "id" in e:
                        out[e["id"]] = (c, d["_id"])
                    else:
                        out[repr(e)] = (c, d["_id"])
    return out


def wait_quiet(db, colls, sub, timeout=60):
    """Waits until no event is pending and the subscriber has been silent for a while."""
    wait_until(lambda: not pending_events(db, colls), timeout, 0.3)
    sub.wait_silence(1.5, 30)


class Figures:
    def __init__(self):
        self.kills = 0
        self.broker_restarts = 0
        self.failpoints = 0
        self.notes = []


def verify(ledger, sub, db, colls, figures, allow_unknown=()):
    """Checks the run; returns (ok, one-line figures, list of problems)."""
    problems = []
    msgs = sub.snapshot()
    first = {}          # id -> index of its first delivery
    per_entity = {}     # (coll, subject) -> [seq of first deliveries in order]
    bad_payload = topic_mismatch = mismatched = phantom = 0
    for topic, payload, _ in msgs:
        try:
            ce = json.loads(payload.decode("utf-8"))
            eid, subject, seq = ce["id"], ce["subject"], int(ce["seq"])
        except Exception:
            bad_payload += 1
            continue
        parts = topic.split("/")
        coll = parts[1] if len(parts) == 3 else None
        if len(parts) != 3 or parts[2] != subject:
            topic_mismatch += 1
        if eid in first:
            continue
        first[eid] = True
        want = ledger.committed.get(eid)
        if want is None:
            if not any(eid in ids for _, _, ids in ledger.unconfirmed) and \
                    eid not in allow_unknown:
                phantom += 1
        elif (want[0], want[1], want[2]) != (coll, subject, seq):
            mismatched += 1
        per_entity.setdefault((coll, subject), []).append(seq)
    out_of_order = 0
    for key, seqs in per_entity.items():
        for a, b in zip(seqs, seqs[1:]):
            if b <= a:
                out_of_order += 1
                if out_of_order <= 3:
                    problems.append("entity %s: first deliveries %s" % (key, seqs[:50]))
    lost_ids = [i for i in ledger.committed if i not in first]
    pending = pending_events(db, colls)
    torn = 0
    for coll, entity, ids in ledger.unconfirmed:
        present = sum(1 for i in ids if i in first or i in pending)
        if present not in (0, len(ids)):
            torn += 1
            problems.append("commit to %s torn: %d of %d events exist" %
                            (entity, present, len(ids)))
    duplicates = len(msgs) - len(first) - bad_payload
    line = ("chaos: events=%d entities=%d kills=%d broker_restarts=%d failpoints=%d lost=%d "
            "out_of_order=%d duplicates=%d pending_left=%d phantom=%d mismatched=%d torn=%d "
            "unconfirmed_commits=%d" %
            (len(ledger.committed), len(ledger.entities()), figures.kills,
             figures.broker_restarts, figures.failpoints, len(lost_ids), out_of_order,
             duplicates, len(pending), phantom, mismatched, torn, len(ledger.unconfirmed)))
    if lost_ids:
        problems.append("%d committed events never delivered, e.g. %s" %
                        (len(lost_ids), [short(ledger.committed[i]) for i in lost_ids[:5]]))
    if pending:
        problems.append("%d events still pending, e.g. %s" %
                        (len(pending), [short(v) for v in list(pending.values())[:5]]))
    for n, what in ((phantom, "events published that were never committed"),
                    (mismatched, "events published with another entity/seq than committed"),
                    (bad_payload, "messages whose payload is not a CloudEvent"),
                    (topic_mismatch, "messages whose topic does not match their subject"),
                    (ledger.redefined, "ids committed twice with different seqs")):
        if n:
            problems.append("%d %s" % (n, what))
    if not ledger.committed:
        problems.append("nothing was committed: the run proves nothing")
    ok = not problems
    return ok, line, problems


def short(value, width=60):
    """A repr that stays readable for 64 KiB ids."""
    text = repr(value)
    return text if len(text) <= width else text[:width] + "...(%d chars)" % len(text)


def new_workdir(tag):
    return tempfile.mkdtemp(prefix="outbox-chaos-%s." % tag)


# ---------------------------------------------------------------------------------------------
# A scenario's world

# Under scripts/test --against the run's prefix; against a URI given without one, a name of
# this process's own (a scenario drops its database before and after it runs).
DB = DB_PREFIX + "chaos" if DB_PREFIX or not EXTERNAL_URI else "chaos_%d" % os.getpid()


class Env:
    """One scenario's world: its own servers, subscriber, ledger and figures; close() stops
    everything it started."""

    def __init__(self, opts, tag, colls=("things",), oplog_size=None, broker_conf="",
                 start_broker=True, members=1, election_timeout_ms=1000, shards=0):
        if EXTERNAL_URI:
            # Needs first, before anything starts: a skip leaves nothing behind.
            if oplog_size:
                requires("small oplog")
            if members > 1:
                requires("members>=%d" % members, "test-mongod faults")
            if shards:
                requires("sharded")
        self.opts = opts
        self.workdir = new_workdir(tag)
        self.colls = list(colls)
        self.relays = []
        self.writers = []
        self.mongod = self.broker = self.sub = None
        self.figures = Figures()
        self.ledger = Ledger()
        self.failed = False
        TIMELINE.clear()
        if EXTERNAL_URI:
            self.mongod = External(EXTERNAL_URI)
            self.mongod.reset()
        else:
            self.mongod = Mongod(opts.mongod, self.workdir, oplog_size, members=members,
                                 election_timeout_ms=election_timeout_ms, shards=shards)
        self.db = self.mongod.client[DB]
        if start_broker:
            self.broker = Broker(self.workdir, broker_conf)
            self.sub = Subscriber(self.broker)

    def relay(self, extra=(), name="chaos", mqtt_uri=None, mongo_uri=None, log_level=None):
        log_level = log_level or self.opts.relay_log_level
        r = Relay(self.opts.relay, self.workdir, mongo_uri or self.mongod.uri,
                     mqtt_uri or self.broker.uri, DB, self.colls, name, extra, log_level)
        self.relays.append(r)
        return r

    def writer(self, coll, prefix, first, count, events, max_per=3, delay_us=0, uri=None):
        w = Writer(self.opts.writer, self.workdir, uri or self.mongod.uri, DB, coll, prefix,
                   first, count, events, max_per, delay_us, self.opts.rng.randrange(1 << 30))
        self.writers.append(w)
        return w

    def finish_writers(self, timeout=120):
        for w in self.writers:
            status = w.wait(timeout)
            if status not in (0, -9, 137):
                raise AssertionError("writer failed (%s): %s" % (status, w.stderr()[-500:]))
            self.ledger.add_writer(w)
        self.writers = []

    def quiet_and_verify(self, timeout=90):
        wait_quiet(self.db, self.colls, self.sub, timeout)
        ok, line, problems = verify(self.ledger, self.sub, self.db, self.colls, self.figures)
        for r in self.relays:
            if r.died() is not None:
                ok = False
                problems.append("relay pid %d died on its own with status %d (log %s)" %
                                (r.pid, r.died(), r.log_path))
        print(line, flush=True)
        for n in self.figures.notes:
            print("  note: %s" % n)
        if not ok:
            self.failed = True
            self.dump()
        return ok, problems

    def dump(self):
        """Writes what the subscriber got and what was committed, for a post-mortem."""
        with open(os.path.join(self.workdir, "messages.txt"), "wb") as f:
            for t, p, when in (self.sub.snapshot() if self.sub else []):
                f.write(b"%.3f " % when + t.encode() + b" " + p[:300] + b"\n")
        with open(os.path.join(self.workdir, "committed.txt"), "w") as f:
            for eid, v in self.ledger.committed.items():
                f.write("%s %s %s %d\n" % (eid, v[0], v[1], v[2]))
        with open(os.path.join(self.workdir, "timeline.txt"), "w") as f:
            f.write("\n".join(TIMELINE) + "\n")
        if pending_events(self.db, self.colls):
            for r in self.relays:
                path = r.save_stacks()
                if path:
                    print("  relay %d is still running: its stacks are in %s" % (r.pid, path))

    def close(self):
        if sys.exc_info()[0] is not None and not self.failed:
            self.failed = True  # a check failed inside the scenario: keep a post-mortem
            try:
                self.dump()
            except Exception as exc:
                print("  (could not dump: %s)" % exc)
        problems = self.stop_relays()
        for w in self.writers:
            w.kill9()
        if self.sub:
            self.sub.close()
        if self.broker:
            self.broker.close()
        if self.mongod:
            self.mongod.close()
        if self.opts.keep or self.failed:
            print("  (kept %s)" % self.workdir)
        else:
            shutil.rmtree(self.workdir, ignore_errors=True)
        if problems and sys.exc_info()[0] is None:  # never mask an earlier failure
            raise AssertionError("; ".join(problems))

    def stop_relays(self):
        """Stops every relay with SIGTERM. A sanitizer report in a log, or a relay that was
        still running and did not exit 0 on SIGTERM, is a failure of the scenario (relays
        that ended on their own, e.g. on a bad flag, are judged by the scenario itself)."""
        problems = []
        for r in self.relays:
            running = r.alive()
            rc = r.stop(10)
            report = r.sanitizer_report()
            if report:
                problems.append(report)
            elif running and not r.kill9ed and rc != 0:
                problems.append("relay pid %d exited with status %s on SIGTERM (log %s)" %
                                (r.pid, rc, r.log_path))
        if problems:
            self.failed = True  # keep the logs
        return problems


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def close_all(*things):
    """Closes, in the order given, each of `things` a scenario got to make (None: not made,
    as when a start-up failed); for a scenario's `finally`."""
    for thing in things:
        if thing is not None:
            thing.close()


def sizes(opts, ci, long):
    return long if opts.long else ci


def expect_clean(env):
    ok, problems = env.quiet_and_verify()
    check(ok, "; ".join(problems))
