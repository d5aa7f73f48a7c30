#!/usr/bin/python3
# Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
"""outbox-relay against brokers that limit or refuse it (issue 14, items 4 and 5): mosquitto
with max_packet_size and message_size_limit, over MQTT 5 and 3.1.1, and TLS listeners whose
certificates the relay must refuse for a reason it names. Each test starts its own mosquitto
(the fixture's runs without limits); MongoDB is the fixture's (or a real replica set).

What mosquitto 2.0.11 does with a too large PUBLISH, checked here:
  max_packet_size     MQTT 5: announced in CONNACK; a larger packet: DISCONNECT 0x95, close.
                      MQTT 3.1.1: closes the connection.
  message_size_limit  MQTT 5: PUBACK 0x95. MQTT 3.1.1: a normal PUBACK, the message dropped
                      (the client cannot tell: only max-message-bytes protects it).

usage: test_brokers.py OUTBOX_RELAY [TEST_NAME ...]   (run under tests/fixtures/with-servers)
"""

import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from relaytest import db_name  # noqa: E402 (the run's database names)
from relaytest import (MONGO_URI, WORKDIR, Broker, Int64, Relay, Subscriber,  # noqa: E402
                       event, free_port, metric, pymongo, run_tests, wait_until)

RELAY_BIN = sys.argv[1] if len(sys.argv) > 1 else "outbox-relay"
RUN = "%d" % os.getpid()
client = pymongo.MongoClient(MONGO_URI) if MONGO_URI else None


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def names(test):
    return db_name("relay_brokers_%s_%s" % (test, RUN)), "things", "relay-%s-%s" % (test, RUN)


def big_event_scenario(test, broker_conf, version, extra=(), expect_reason=None):
    """A 200 KB event between two small ones, to a broker that takes 64 KiB at most: the big
    one is dead-lettered (with @expect_reason in its reason), the small ones are delivered in
    order, and the connection settles (no more reconnects)."""
    dbname, cname, rname = names(test)
    coll = client[dbname][cname]
    broker = Broker(test, broker_conf)
    sub = Subscriber("outbox/%s/#" % cname, uri=broker.uri)
    mport = free_port()
    relay = None
    try:
        small1, big, small2 = event(1), event(2, data={"blob": "x" * 200000}), event(3)
        coll.insert_one({"_id": "big", "version": Int64(1), "eventSeq": Int64(3),
                         "events": [small1, big, small2]})
        relay = Relay(RELAY_BIN, dbname, [cname], rname,
                      ["--mqtt-version", str(version),
                       "--metrics-listen", "127.0.0.1:%d" % mport] + list(extra),
                      mqtt_uri=broker.uri)
        if not wait_until(lambda: len(coll.find_one({"_id": "big"}).get("events", [])) == 0, 60):
            raise AssertionError("events still pending: %s; relay log:\n%s" % (
                [e["seq"] for e in coll.find_one({"_id": "big"})["events"]],
                relay.log_text()[-4000:]))
        doc = coll.find_one({"_id": "big"})
        dead = doc.get("deadLetters", [])
        check(len(dead) == 1 and dead[0]["event"]["id"] == big["id"],
              "dead letters: %s" % [(d["event"].get("seq"), d.get("reason")) for d in dead])
        check(expect_reason in dead[0]["reason"], "reason %r" % dead[0]["reason"])
        check(wait_until(lambda: sub.count() >= 2, 20), "small events not delivered")
        got = [json.loads(p)["id"] for _, p, _ in sub.snapshot()]
        check(got[:2] == [small1["id"], small2["id"]] and big["id"] not in got,
              "delivered %s" % got)
        # The connection settles: no reconnect for a few seconds after the dead letter.
        before = metric(mport, "outbox_relay_mqtt_reconnects_total")
        time.sleep(3)
        after = metric(mport, "outbox_relay_mqtt_reconnects_total")
        check(before is not None and before == after,
              "the relay kept reconnecting (%s then %s)" % (before, after))
        check(relay.proc.poll() is None, "relay exited")
        return relay, before
    finally:
        if relay:
            relay.stop()
        sub.close()
        broker.close()


def test_max_packet_size_mqtt5():
    """The broker announces its Maximum Packet Size: the big event never leaves the relay."""
    _, reconnects = big_event_scenario(
        "maxpkt5", "max_packet_size 65536\n", 5,
        expect_reason="Maximum Packet Size (65536 bytes")
    check(reconnects == 0, "%s reconnects: the big event was sent" % reconnects)


def test_max_packet_size_mqtt311():
    """MQTT 3.1.1 has no way to announce a limit or say why it closes: the message the broker
    drops the connection on three times in a row is dead-lettered, and /healthz said so
    meanwhile."""
    relay, reconnects = big_event_scenario(
        "maxpkt311", "max_packet_size 65536\n", 4,
        expect_reason="the broker closed the connection each time this message was sent (3 "
                      "times in a row) without giving a reason (MQTT 3.1.1 has none)")
    text = relay.log_text()
    check(reconnects >= 2, "only %s reconnects before the dead letter" % reconnects)
    check("reconnecting with a clean session" in text, "no clean session after the verdict")


def test_message_size_limit_mqtt5():
    """message_size_limit answers MQTT 5 with PUBACK 0x95: dead-lettered at once."""
    _, reconnects = big_event_scenario("msglim5", "message_size_limit 65536\n", 5,
                                       expect_reason="refused by the broker")
    check(reconnects == 0, "%s reconnects" % reconnects)


def test_message_size_limit_mqtt311_needs_max_message_bytes():
    """message_size_limit acknowledges an MQTT 3.1.1 publish and drops it: no client can tell.
    max-message-bytes set to the broker's limit dead-letters it instead (what the man page
    says to do)."""
    big_event_scenario("msglim311", "message_size_limit 65536\n", 4,
                       extra=["--max-message-bytes", "65536"],
                       expect_reason="larger than max-message-bytes")


class DisconnectingBroker:
    """Just enough of an MQTT 5 broker: accepts each CONNECT, then after a second sends
    DISCONNECT with @reason (as a broker does to the older of two clients with one client
    id: 0x8E, session taken over) and closes. mosquitto 2.0.11 closes such a connection
    without a DISCONNECT, so it cannot show this."""

    def __init__(self, reason, on_publish=False):
        import socket
        import threading
        self.reason = reason
        self.on_publish = on_publish  # wait for a PUBLISH (0x3X) instead of a second
        self.connects = 0
        self.srv = socket.socket()
        self.srv.bind(("127.0.0.1", 0))
        self.srv.listen()
        self.uri = "tcp://127.0.0.1:%d" % self.srv.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        import threading
        while True:
            try:
                conn, _ = self.srv.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn):
        try:
            conn.recv(65536)                                  # CONNECT
            conn.sendall(bytes([0x20, 3, 0, 0, 0]))           # CONNACK, success, no properties
            self.connects += 1
            if self.on_publish:
                while (conn.recv(1) or b"\x30")[0] >> 4 != 3:  # skip to a PUBLISH
                    pass
            else:
                time.sleep(1)
            conn.sendall(bytes([0xE0, 2, self.reason, 0]))    # DISCONNECT, reason, no properties
            time.sleep(0.3)
        except OSError:
            pass
        conn.close()

    def close(self):
        self.srv.close()


def test_client_id_collision_names_the_reason():
    """A broker's MQTT 5 DISCONNECT reason is logged with the client id (issue 29, 14), and
    the relay takes the connection for lost (paho 1.3.12 calls no connection-lost callback
    after a DISCONNECT) and connects again. With mosquitto, which closes the older connection
    of a client id without a reason, the log names the client id as a likely cause. The
    start-up names the client id really used (one made from --name has a random suffix)."""
    dbname, cname, rname = names("clientid")
    fake = DisconnectingBroker(0x8E)
    broker = Broker("clientid")
    relay = named = thief = None
    try:
        cid = "cid-%s" % RUN
        relay = Relay(RELAY_BIN, dbname, [cname], rname, ["--client-id", cid],
                      mqtt_uri=fake.uri)
        check(relay.wait_log("connection lost: the broker disconnected with reason 0x8E "
                             "(session taken over): another client connected with client id "
                             "'%s'" % cid), "no reason in the log:\n" + relay.log_text()[-2000:])
        check(wait_until(lambda: fake.connects >= 2, 15), "the relay did not connect again")
        check("client id '%s'\n" % cid in relay.log_text(), "client id not logged")
        relay.stop()

        relay = Relay(RELAY_BIN, dbname, [cname], rname, ["--client-id", cid],
                      mqtt_uri=broker.uri)
        check(relay.wait_log("connected to"), "relay did not connect:\n" + relay.log_text()[-2000:])
        thief = Subscriber("nothing/#", client_id=cid, uri=broker.uri)
        check(relay.wait_log("(the broker gave no reason; it closes the connection this way too "
                             "when another client connects with client id '%s')" % cid),
              "no hint in the log:\n" + relay.log_text()[-2000:])
        named = Relay(RELAY_BIN, dbname, [cname], rname + "-n", mqtt_uri=broker.uri)
        check(named.wait_log("connected to"), "second relay did not connect")
        import re
        check(re.search(r"client id '%s-n-[0-9a-f]{8}' \(from --name" % re.escape(rname),
                        named.log_text()), "suffixed client id not logged:\n" +
              named.log_text()[-2000:])
    finally:
        if thief:
            thief.close()
        for r in (relay, named):
            if r:
                r.stop()
        broker.close()
        fake.close()


def test_dead_letter_reason_names_the_disconnect_reason():
    """Issue 29, 12: a broker that disconnects with an MQTT 5 reason on every publish of one
    message (here 0x90, topic name invalid, as a broker answers a '$' topic) gets it
    dead-lettered with that reason, not with a guess at its size."""
    dbname, cname, rname = names("discreason")
    coll = client[dbname][cname]
    fake = DisconnectingBroker(0x90, on_publish=True)
    relay = None
    try:
        coll.insert_one({"_id": "x", "version": Int64(1), "eventSeq": Int64(1),
                         "events": [event(1)]})
        relay = Relay(RELAY_BIN, dbname, [cname], rname, ["--reconnect-max-ms", "1000"],
                      mqtt_uri=fake.uri)
        check(wait_until(lambda: coll.find_one({"_id": "x"}).get("deadLetters"), 40),
              "not dead-lettered; log:\n" + relay.log_text()[-3000:])
        reason = coll.find_one({"_id": "x"})["deadLetters"][0]["reason"]
        check(reason == "the broker closed the connection each time this message was sent (3 "
              "times in a row), the last time with MQTT 5 DISCONNECT reason 0x90 (topic name "
              "invalid)", reason)
    finally:
        if relay:
            relay.stop()
        fake.close()


# --- TLS -----------------------------------------------------------------------------------

def openssl(*args, cwd):
    subprocess.run(["openssl"] + list(args), cwd=cwd, check=True, capture_output=True)


def make_certs(d):
    """A CA, another CA, and server certificates: good (localhost, 127.0.0.1), for another
    name, and expired (2020)."""
    os.makedirs(os.path.join(d, "db"), exist_ok=True)
    for ca in ("ca", "other-ca"):
        openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", ca + ".key",
                "-out", ca + ".crt", "-days", "2", "-subj", "/CN=" + ca, cwd=d)
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out",
            "server.csr", "-subj", "/CN=localhost", cwd=d)
    with open(os.path.join(d, "good.ext"), "w") as f:
        f.write("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    with open(os.path.join(d, "wrong.ext"), "w") as f:
        f.write("subjectAltName=DNS:wrong.example\n")
    for name, ext in (("server", "good.ext"), ("wrong", "wrong.ext")):
        openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
                "-CAcreateserial", "-out", name + ".crt", "-days", "2", "-extfile", ext, cwd=d)
    open(os.path.join(d, "db", "index.txt"), "w").close()
    with open(os.path.join(d, "db", "serial"), "w") as f:
        f.write("01\n")
    with open(os.path.join(d, "ca.cnf"), "w") as f:
        f.write("[ca]\ndefault_ca = tca\n[tca]\ndir = .\ndatabase = db/index.txt\n"
                "serial = db/serial\nnew_certs_dir = db\ncertificate = ca.crt\n"
                "private_key = ca.key\ndefault_md = sha256\npolicy = pol\n"
                "unique_subject = no\n[pol]\ncommonName = supplied\n")
    openssl("ca", "-batch", "-config", "ca.cnf", "-in", "server.csr", "-out", "expired.crt",
            "-startdate", "20200101000000Z", "-enddate", "20200102000000Z", "-extfile",
            "good.ext", cwd=d)


def tls_case(d, cert, ca, host, needle, extra=()):
    dbname, cname, rname = names("tls")
    broker = Broker("tls-" + cert, listener_extra="certfile %s\nkeyfile %s\n" %
                    (os.path.join(d, cert), os.path.join(d, "server.key")))
    relay = Relay(RELAY_BIN, dbname, [cname], rname,
                  ["--mqtt-ca-file", os.path.join(d, ca), "--log-level", "info"] + list(extra),
                  mqtt_uri="ssl://%s:%d" % (host, broker.port))
    try:
        found = relay.wait_log(needle, 20)
        text = relay.log_text()
        check(found, "%s: no %r in the log: %s" % (cert, needle, [
            ln for ln in text.splitlines() if "mqtt" in ln][-3:]))
        return text
    finally:
        relay.stop()
        broker.close()


def test_tls_failures_name_the_reason():
    """TLS failures say why (they said only "TCP/TLS connect failure"), at the default log
    level; --mqtt-tls-insecure warns at start."""
    if not shutil.which("openssl"):
        print("skip: no openssl command")
        return
    d = os.path.join(WORKDIR, "tls-certs")
    os.makedirs(d, exist_ok=True)
    make_certs(d)
    tls_case(d, "server.crt", "other-ca.crt", "localhost",
             "TCP/TLS connect failure: the relay ended the TLS handshake: unknown CA")
    tls_case(d, "expired.crt", "ca.crt", "localhost",
             "TCP/TLS connect failure: the relay ended the TLS handshake: certificate expired")
    tls_case(d, "wrong.crt", "ca.crt", "localhost",
             "TCP/TLS connect failure: the broker's certificate is not valid for the host "
             "name 'localhost'")
    text = tls_case(d, "wrong.crt", "ca.crt", "localhost", "mqtt: connected to ssl://",
                    extra=["--mqtt-tls-insecure"])
    check("WARN  mqtt: mqtt-tls-insecure is set: the broker's host name is not checked" in text,
          "no warning for --mqtt-tls-insecure")
    text = tls_case(d, "server.crt", "ca.crt", "localhost", "mqtt: connected to ssl://")
    check("mqtt-tls-insecure is set" not in text and "TLS handshake" not in text,
          "a warning on a verified connection")


TESTS = [test_client_id_collision_names_the_reason,
         test_dead_letter_reason_names_the_disconnect_reason, test_max_packet_size_mqtt5, test_max_packet_size_mqtt311, test_message_size_limit_mqtt5,
         test_message_size_limit_mqtt311_needs_max_message_bytes,
         test_tls_failures_name_the_reason]


def main():
    return run_tests("relay-brokers", TESTS, sys.argv[2:])


if __name__ == "__main__":
    sys.exit(main())
