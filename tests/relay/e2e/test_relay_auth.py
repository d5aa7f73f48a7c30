#!/usr/bin/python3
# Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
"""outbox-relay against a MongoDB with authentication and TLS (with-servers --mongod-user
NAME:PASSWORD:root --mongod-tls, or a real mongod --auth whose root credentials are in
OUTBOX_TEST_MONGODB_URI): a user that may read but not write, a wrong password, a wrong CA.
The relay's users are made by the test with the root client. No password may appear in any
output of the relay.

usage: test_relay_auth.py OUTBOX_RELAY [TEST_NAME ...]   (run under tests/fixtures/with-servers)
"""

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from relaytest import (run_tests, MONGO_URI, MQTT_URI, WORKDIR, Entities, Subscriber,  # noqa: E402
                       pymongo, wait_until)

RELAY_BIN = sys.argv[1] if len(sys.argv) > 1 else "outbox-relay"
RUN = "%d" % os.getpid()
PASSWORDS = {"ro": "Relay-ro-pw-Mv83", "rw": "Relay-rw-pw-Tq29", "wrong": "Relay-bad-pw-Hx61"}
client = pymongo.MongoClient(MONGO_URI, serverSelectionTimeoutMS=10000) if MONGO_URI else None
OUTPUTS = []  # every log file of every relay started here


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def has_root():
    status = client.admin.command("connectionStatus")
    return {"role": "root", "db": "admin"} in status["authInfo"]["authenticatedUserRoles"]


def uri_as(user, password, ca=None):
    """MONGO_URI with other credentials (in admin) and, optionally, another tlsCAFile."""
    parts = urllib.parse.urlsplit(MONGO_URI)
    host = parts.netloc.rsplit("@", 1)[-1]
    query = [(k, v) for k, v in urllib.parse.parse_qsl(parts.query)
             if k != "authSource" and not (ca and k == "tlsCAFile")]
    query.append(("authSource", "admin"))
    if ca:
        query.append(("tlsCAFile", ca))
    netloc = "%s:%s@%s" % (urllib.parse.quote(user, safe=""),
                           urllib.parse.quote(password, safe=""), host)
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path or "/",
                                    urllib.parse.urlencode(query, safe="/"), ""))


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class AuthRelay:
    """A relay whose MongoDB URI (with its password) goes through the environment, as an
    operator should pass it, never the command line."""

    def __init__(self, uri, db, coll, name, metrics_port=None, extra=()):
        self.log_path = os.path.join(WORKDIR, "relay-auth-%s.log" % name)
        OUTPUTS.append(self.log_path)
        self.log = open(self.log_path, "ab")
        env = dict(os.environ, OUTBOX_MONGODB_URI=uri)
        args = [RELAY_BIN, "--database", db, "--collection", coll, "--mqtt-uri", MQTT_URI,
                "--name", name, "--log-level", "debug", "--checkpoint-interval-ms", "200",
                "--reconnect-min-ms", "100", "--reconnect-max-ms", "1000",
                "--metrics-listen",
                "127.0.0.1:%d" % metrics_port if metrics_port else "off"] + list(extra)
        self.metrics_port = metrics_port
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=self.log, env=env)

    def text(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def lines(self, needle):
        return [l for l in self.text().splitlines() if needle in l]

    def wait_log(self, needle, timeout=30):
        return wait_until(lambda: needle in self.text() or self.proc.poll() is not None,
                          timeout) and needle in self.text()

    def cpu_seconds(self):
        with open("/proc/%d/stat" % self.proc.pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def health(self):
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d/healthz" % self.metrics_port,
                                        timeout=5) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()
        except OSError:
            return None, ""

    def stop(self, timeout=30):
        if self.proc.poll() is None:
            self.proc.terminate()
        rc = self.proc.wait(timeout)
        self.log.close()
        for marker in ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:"):
            check(marker not in self.text(), "%s in %s" % (marker, self.log_path))
        return rc


def make_user(role, dbname, kind):
    name = "relay_%s_%s" % (kind, RUN)
    client.admin.command("createUser", name, pwd=PASSWORDS[kind],
                         roles=[{"role": role, "db": dbname}])
    return name


def drop_user(name):
    client.admin.command("dropUser", name)


def pending_ids(coll):
    return sorted(e["id"] for d in coll.find({}, {"events": 1}) for e in d.get("events", []))


def test_read_only_user():
    """A user that may read but not write: the relay cannot take a partition lease, says so
    once (an ERROR naming the missing role), publishes nothing,
    retries with backoff without spinning, fails /healthz; once the user may write, it clears
    everything, resumes, and every event was published at least once."""
    dbname, cname, rname = "relay_auth_ro_%s" % RUN, "things", "relay-ro-%s" % RUN
    coll = client[dbname][cname]
    ents = Entities(coll)
    for i in range(5):
        ents.create("e%d" % i, n_events=2)
    user = make_user("read", dbname, "ro")
    sub = Subscriber("outbox/%s/#" % cname)
    relay = AuthRelay(uri_as(user, PASSWORDS["ro"]), dbname, cname, rname, free_port())
    try:
        check(relay.wait_log("MongoDB refuses the relay's writes"),
              "no refusal reported:\n" + relay.text()[-3000:])
        check(relay.proc.poll() is None, "the relay exited")
        # A relay whose writes are refused cannot hold a partition lease, so it publishes
        # nothing at all (before relay groups it published once, then found its clears
        # refused).
        published = sub.count()
        check(published == 0, "published %d without holding a lease" % published)
        # Watch it for a while: no more messages, one refusal line, little CPU.
        cpu0, t0 = relay.cpu_seconds(), time.monotonic()
        ents.append("e0", n_events=3)
        ents.create("late", n_events=2)
        time.sleep(4)
        cpu = relay.cpu_seconds() - cpu0
        wall = time.monotonic() - t0
        check(sub.count() == published,
              "published %d more while clears were refused" % (sub.count() - published))
        refusals = relay.lines("MongoDB refuses the relay's writes")
        check(len(refusals) == 1, "the refusal was logged %d times" % len(refusals))
        check(" ERROR " in refusals[0] and "readWrite" in refusals[0], refusals[0])
        noisy = [l for l in relay.lines(" WARN ") + relay.lines(" ERROR ")]
        check(len(noisy) <= 4, "%d warnings/errors:\n%s" % (len(noisy), "\n".join(noisy)))
        check(cpu < 0.5 * wall, "the relay used %.2f s of CPU in %.1f s" % (cpu, wall))
        status, body = relay.health()
        check(status == 503 and "refuses" in body, "healthz: %s %s" % (status, body))
        check(len(pending_ids(coll)) == 15, "events were removed by a read-only user")
        # Now the user may write: everything gets cleared, the paused events go out.
        client.admin.command("updateUser", user, roles=[{"role": "readWrite", "db": dbname}])
        check(relay.wait_log("MongoDB accepts the relay's writes again"),
              "no recovery:\n" + relay.text()[-3000:])
        check(wait_until(lambda: not pending_ids(coll), 30),
              "still pending: %s" % pending_ids(coll))
        every = {eid for ids in ents.ids.values() for eid in ids}
        seen = {json.loads(p.decode("utf-8"))["id"] for _, p, _ in sub.snapshot()}
        check(every <= seen, "never published: %s" % sorted(every - seen))
        check(wait_until(lambda: relay.health()[0] == 200, 10),
              "healthz after recovery: %s" % (relay.health(),))
    finally:
        rc = relay.stop()
        sub.close()
        drop_user(user)
        client.drop_database(dbname)
    check(rc == 0, "exit status %s" % rc)


def test_wrong_password_exits():
    """A wrong password at start is fatal: one clear error naming authentication, exit 77
    (EX_NOPERM); nothing published, nothing cleared."""
    dbname, cname, rname = "relay_auth_pw_%s" % RUN, "things", "relay-pw-%s" % RUN
    coll = client[dbname][cname]
    Entities(coll).create("e", n_events=2)
    user = make_user("readWrite", dbname, "rw")
    relay = AuthRelay(uri_as(user, PASSWORDS["wrong"]), dbname, cname, rname)
    try:
        rc = relay.proc.wait(60)
    except subprocess.TimeoutExpired:
        rc = None
    text = relay.text()
    relay.stop()
    try:
        check(rc == 77, "exit status %s, log:\n%s" % (rc, text[-3000:]))
        line = [l for l in relay.lines("MongoDB authentication failed") if " ERROR " in l]
        check(len(line) == 1, "log:\n%s" % text[-3000:])
        check(len(pending_ids(coll)) == 2, "events were cleared")
    finally:
        drop_user(user)
        client.drop_database(dbname)


def test_tls_wrong_ca_then_right_ca():
    """With a CA that did not sign the server's certificate the relay says why once, keeps
    trying, writes nothing; with the right one it publishes and clears."""
    tls_dir = os.environ.get("OUTBOX_TEST_TLS_DIR")
    if not tls_dir or "tls=true" not in MONGO_URI:
        print("SKIP test_tls_wrong_ca_then_right_ca: needs a TLS server and OUTBOX_TEST_TLS_DIR "
              "with ca.pem and wrong-ca.pem (with-servers --mongod-tls)")
        return
    dbname, cname, rname = "relay_auth_tls_%s" % RUN, "things", "relay-tls-%s" % RUN
    coll = client[dbname][cname]
    ents = Entities(coll)
    ents.create("e", n_events=3)
    user = make_user("readWrite", dbname, "rw")
    sub = Subscriber("outbox/%s/#" % cname)
    try:
        relay = AuthRelay(uri_as(user, PASSWORDS["rw"], os.path.join(tls_dir, "wrong-ca.pem")),
                          dbname, cname, rname)
        check(relay.wait_log("TLS handshake failed"), "log:\n" + relay.text()[-3000:])
        time.sleep(3)
        check(relay.proc.poll() is None, "the relay exited on a TLS failure")
        loud = [l for l in relay.lines("TLS handshake failed") if " DEBUG " not in l]
        check(len(loud) == 1, "the TLS failure was logged %d times above debug:\n%s"
              % (len(loud), "\n".join(loud)))
        check(sub.count() == 0 and len(pending_ids(coll)) == 3, "something happened")
        check(relay.stop() == 0, "exit status")
        relay = AuthRelay(uri_as(user, PASSWORDS["rw"], os.path.join(tls_dir, "ca.pem")),
                          dbname, cname, rname + "-right")
        check(wait_until(lambda: not pending_ids(coll), 30), "not cleared:\n" + relay.text()[-3000:])
        check(sub.count() >= 3, "published %d" % sub.count())
        check(relay.stop() == 0, "exit status")
    finally:
        sub.close()
        drop_user(user)
        client.drop_database(dbname)


def test_cluster_stream_needs_any_database():
    """--namespace patterns that span databases need a cluster stream: a user with readWrite
    on those databases only is refused (13); the relay says once which privileges it needs,
    keeps trying, and publishes once the user may read every database (issue 37)."""
    a, b, rname = "relay_auth_ta_%s" % RUN, "relay_auth_tb_%s" % RUN, "relay-cl-%s" % RUN
    Entities(client[a]["orders"]).create("x", n_events=1)
    Entities(client[b]["orders"]).create("y", n_events=1)
    name = "relay_cl_%s" % RUN
    client.admin.command("createUser", name, pwd=PASSWORDS["rw"],
                         roles=[{"role": "readWrite", "db": a}, {"role": "readWrite", "db": b}])
    sub = Subscriber("outbox/orders/#")
    relay = AuthRelay(uri_as(name, PASSWORDS["rw"]), a, "unused", rname,
                      extra=["--namespace", "relay_auth_t*_%s.orders" % RUN])
    try:
        check(relay.wait_log("refuses the cluster change stream"),
              "no explanation:\n" + relay.text()[-3000:])
        lines = relay.lines("refuses the cluster change stream")
        check(" ERROR " in lines[0] and "readAnyDatabase" in lines[0], lines[0])
        check(relay.proc.poll() is None, "the relay exited")
        client.admin.command("updateUser", name,
                             roles=[{"role": "readWrite", "db": a}, {"role": "readWrite", "db": b},
                                    {"role": "readAnyDatabase", "db": "admin"}])
        check(wait_until(lambda: sub.count() >= 2, 30),
              "not published after the grant:\n" + relay.text()[-3000:])
        check(len(relay.lines("refuses the cluster change stream")) == 1, "said more than once")
    finally:
        rc = relay.stop()
        sub.close()
        drop_user(name)
        client.drop_database(a)
        client.drop_database(b)
    check(rc == 0, "exit status %s" % rc)


TESTS = [test_cluster_stream_needs_any_database, test_read_only_user, test_wrong_password_exits, test_tls_wrong_ca_then_right_ca]


def no_password_in_outputs():
    for path in OUTPUTS:
        with open(path, "rb") as f:
            text = f.read().decode("utf-8", "replace")
        for pw in PASSWORDS.values():
            check(pw not in text and urllib.parse.quote(pw) not in text,
                  "a password appears in %s" % path)


def main():
    if not MONGO_URI:
        print("relay-auth: OUTBOX_TEST_MONGODB_URI is not set (run under with-servers)")
        return 77
    if not has_root():
        print("skip: needs a server with authentication and root credentials in "
              "OUTBOX_TEST_MONGODB_URI (with-servers --mongod-user NAME:PASSWORD:root)")
        return 77
    # no_password_in_outputs reads what the others left behind: it always runs, last.
    wanted = sys.argv[2:]
    if wanted:
        wanted = wanted + ["no_password_in_outputs"]
    return run_tests("relay-auth", TESTS + [no_password_in_outputs], wanted)

if __name__ == "__main__":
    sys.exit(main())
