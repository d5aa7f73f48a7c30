#!/usr/bin/python3
# Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
"""Mutual TLS (issue 38, item 1): mosquitto with require_certificate and
use_identity_as_username, its ACL letting only the client certificate's CN publish, and
certificates made here with openssl (tests/fixtures/make-test-certs and a few more: expired,
from a CA the broker does not trust, an encrypted key, a key of another certificate).

- the relay connects with its certificate and its events arrive (published as the
  certificate's CN: an anonymous publish would be refused by the ACL);
- no certificate, a certificate of an untrusted CA: the log names the relay's certificate,
  never the broker's;
- expired, key mismatch, encrypted key without a passphrase, missing file: exit 78 at start
  with the option, the file and the reason; --check-config says the same, and warns of a
  certificate that expires within 14 days;
- an encrypted key opens with OUTBOX_MQTT_KEY_PASSWORD_FILE;
- a certificate renewed on disk is used at the next reconnect (the broker restarted);
- outbox-admin replay takes the same options and checks the same files.

usage: test_mtls.py OUTBOX_RELAY OUTBOX_ADMIN [TEST_NAME ...]   (under tests/fixtures/with-servers)
"""

import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from relaytest import db_name  # noqa: E402 (the run's database names)
from relaytest import (MONGO_URI, WORKDIR, Int64, Relay, Subscriber, event,  # noqa: E402
                       free_port, pymongo, run_tests, wait_until)

RELAY_BIN = sys.argv[1] if len(sys.argv) > 1 else "outbox-relay"
ADMIN_BIN = sys.argv[2] if len(sys.argv) > 2 else "outbox-admin"
RUN = "%d" % os.getpid()
HERE = os.path.dirname(os.path.abspath(__file__))
MAKE_CERTS = os.path.join(HERE, "..", "..", "fixtures", "make-test-certs")
CERTS = os.path.join(WORKDIR, "mtls-certs-%s" % RUN)
client = pymongo.MongoClient(MONGO_URI) if MONGO_URI else None


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def openssl(*args):
    subprocess.run(["openssl"] + list(args), cwd=CERTS, check=True, capture_output=True)


def leaf(name, cn, ca, days="2", extra=()):
    """A client certificate NAME.crt with key NAME.key signed by CA (ca or other-ca)."""
    openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out",
            name + ".key")
    openssl("req", "-new", "-key", name + ".key", "-subj", "/CN=" + cn, "-out", name + ".csr")
    openssl("x509", "-req", "-in", name + ".csr", "-CA", ca + ".pem", "-CAkey", ca + ".key",
            "-CAcreateserial", "-days", days, "-out", name + ".crt", *extra)


def make_certs():
    if os.path.isdir(CERTS):
        return
    subprocess.run([MAKE_CERTS, CERTS], check=True, capture_output=True)
    # The fixture keeps no key of its wrong CA: another one, to sign an untrusted client.
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", "other-ca.key", "-out", "other-ca.pem", "-days", "2", "-subj",
            "/CN=untrusted CA")
    # make-test-certs keeps ca.key: more client certificates of the trusted CA.
    leaf("relay", "outbox-relay-a", "ca")
    leaf("renewed", "outbox-relay-b", "ca")
    leaf("untrusted", "outbox-relay-a", "other-ca")
    leaf("stranger", "outbox-relay-a", "ca")
    # Expired: -days -1 ends the day before it starts.
    openssl("req", "-new", "-key", "relay.key", "-subj", "/CN=outbox-relay-a", "-out", "old.csr")
    openssl("x509", "-req", "-in", "old.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
            "-CAcreateserial", "-days", "-1", "-out", "expired.crt")
    openssl("pkey", "-in", "relay.key", "-aes256", "-passout", "pass:s3cret-pass", "-out",
            "encrypted.key")
    with open(os.path.join(CERTS, "key-pass"), "w") as f:
        f.write("s3cret-pass\n")


def p(name):
    return os.path.join(CERTS, name)


class MtlsBroker:
    """mosquitto with a plain listener (for the test's subscriber) and a TLS listener that
    requires a client certificate from ca.pem and takes its CN as the user name; the ACL
    lets outbox-relay-a and outbox-relay-b publish under outbox/ and anyone read."""

    def __init__(self, name):
        import getpass
        self.name = name
        self.port, self.tls_port = free_port(), free_port()
        self.conf = os.path.join(WORKDIR, "mosquitto-mtls-%s-%s.conf" % (name, RUN))
        self.acl = self.conf + ".acl"
        self.log_path = self.conf + ".log"
        with open(self.acl, "w") as f:
            f.write("topic read outbox/#\n\nuser outbox-relay-a\ntopic readwrite outbox/#\n\n"
                    "user outbox-relay-b\ntopic readwrite outbox/#\n")
        with open(self.conf, "w") as f:
            f.write("per_listener_settings false\nallow_anonymous true\npersistence false\n"
                    "user %s\nlog_dest stderr\nacl_file %s\n"
                    "listener %d 127.0.0.1\n"
                    "listener %d 127.0.0.1\ncafile %s\ncertfile %s\nkeyfile %s\n"
                    "require_certificate true\nuse_identity_as_username true\n" % (
                        getpass.getuser(), self.acl, self.port, self.tls_port, p("ca.pem"),
                        p("server.pem"), p("server.pem")))
        self.uri = "tcp://127.0.0.1:%d" % self.port
        self.tls_uri = "ssl://localhost:%d" % self.tls_port
        self.start()

    def start(self):
        binary = "/usr/sbin/mosquitto" if os.path.exists("/usr/sbin/mosquitto") else "mosquitto"
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen([binary, "-c", self.conf], stdout=self.log, stderr=self.log)
        if not wait_until(self._listening, 10):
            self.close()
            raise RuntimeError("mosquitto did not start: %s" % self.log_text()[-800:])

    def _listening(self):
        import socket
        try:
            for port in (self.port, self.tls_port):
                socket.create_connection(("127.0.0.1", port), 0.2).close()
            return True
        except OSError:
            return False

    def log_text(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def close(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)
        self.log.close()


def names(test):
    return db_name("relay_mtls_%s_%s" % (test, RUN)), "things", "mtls-%s-%s" % (test, RUN)


def tls_args(cert, key, ca="ca.pem"):
    args = ["--mqtt-ca-file", p(ca)]
    if cert:
        args += ["--mqtt-cert-file", p(cert)]
    if key:
        args += ["--mqtt-key-file", p(key)]
    return args


def relay_with(test, broker, args, env=None):
    dbname, cname, rname = names(test)
    old = dict(os.environ)
    os.environ.update(env or {})
    try:
        return Relay(RELAY_BIN, dbname, [cname], rname, args, mqtt_uri=broker.tls_uri)
    finally:
        os.environ.clear()
        os.environ.update(old)


def insert(test, seqs):
    dbname, cname, _ = names(test)
    coll = client[dbname][cname]
    eid = "e-%d" % seqs[0]
    coll.insert_one({"_id": eid, "version": Int64(1), "eventSeq": Int64(seqs[-1]),
                     "events": [event(s) for s in seqs]})
    return coll, eid


def delivered(test, broker, relay, sub, seqs):
    coll, eid = insert(test, seqs)
    ok = wait_until(lambda: sub.count() >= len(seqs) and not coll.find_one({"_id": eid})["events"],
                    20)
    check(ok, "events not delivered (%d of %d); relay log:\n%s\nbroker log:\n%s" % (
        sub.count(), len(seqs), relay.log_text()[-2500:], broker.log_text()[-1500:]))
    check(not coll.find_one({"_id": eid}).get("deadLetters"), "dead-lettered: %s" %
          coll.find_one({"_id": eid}).get("deadLetters"))


def test_connects_with_its_certificate():
    """The relay's certificate is its identity: the ACL lets only its CN publish."""
    broker = MtlsBroker("ok")
    sub = Subscriber("outbox/#", uri=broker.uri)
    relay = relay_with("ok", broker, tls_args("relay.crt", "relay.key"))
    try:
        check(relay.wait_log("mqtt: connected to ssl://"), relay.log_text()[-2000:])
        delivered("ok", broker, relay, sub, [1, 2, 3])
        check("u'outbox-relay-a'" in broker.log_text(), "the broker did not take the CN as the "
              "user name:\n" + broker.log_text()[-1500:])
    finally:
        relay.stop()
        sub.close()
        broker.close()


def refused_case(test, args, needle, forbidden=None):
    broker = MtlsBroker(test)
    relay = relay_with(test, broker, args)
    try:
        found = relay.wait_log(needle, 20)
        text = relay.log_text()
        check(found, "%s: no %r in the log:\n%s" % (test, needle, text[-2500:]))
        if forbidden:
            check(forbidden not in text, "%s: %r in the log" % (test, forbidden))
    finally:
        relay.stop()
        broker.close()


def test_broker_refusals_name_the_relays_certificate():
    """The broker refuses the relay's certificate (or its absence): the log says so and names
    the file; it used to blame the broker's certificate ("is the broker's certificate signed by
    a CA in --mqtt-ca-file")."""
    refused_case("nocert", ["--mqtt-ca-file", p("ca.pem")],
                 "the broker wants a client certificate: --mqtt-cert-file")
    refused_case("untrusted", tls_args("untrusted.crt", "untrusted.key"),
                 "the broker refused the relay's certificate, mqtt-cert-file '%s'" %
                 p("untrusted.crt"), forbidden="is the broker's certificate signed")


def start_error(args, env=None, binary=None, check_config=False):
    """Runs the relay (or @binary) expecting exit 78; returns its stderr and log."""
    dbname, cname, rname = names("bad")
    log = os.path.join(WORKDIR, "mtls-bad-%s.log" % RUN)
    cmd = [binary or RELAY_BIN, "--mongodb-uri", MONGO_URI, "--database", dbname,
           "--collection", cname, "--mqtt-uri", "ssl://localhost:1", "--name", rname,
           "--metrics-listen", "off", "--log-file", log] + args
    if check_config:
        cmd.append("--check-config")
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=30,
                         env=dict(os.environ, **(env or {})))
    text = run.stderr + (open(log).read() if os.path.exists(log) else "")
    if os.path.exists(log):
        os.unlink(log)
    return run.returncode, text


def test_bad_files_are_named_at_start_and_by_check_config():
    """Expired, key of another certificate, encrypted key without a passphrase, no such file:
    exit 78 with the option, the file and the reason, at start and with --check-config."""
    cases = [
        (tls_args("expired.crt", "relay.key"),
         "mqtt-cert-file '%s': the certificate expired on" % p("expired.crt")),
        (tls_args("relay.crt", "stranger.key"),
         "mqtt-key-file '%s': the private key does not match the certificate in mqtt-cert-file "
         "'%s'" % (p("stranger.key"), p("relay.crt"))),
        (tls_args("relay.crt", "encrypted.key"),
         "mqtt-key-file '%s': the private key is encrypted: give its passphrase in "
         "mqtt-key-password-file" % p("encrypted.key")),
        (tls_args("relay.crt", "missing.key"),
         "--mqtt-key-file: cannot read '%s': No such file" % p("missing.key")),
        (tls_args("relay.crt", "relay.key", ca="key-pass"),
         "mqtt-ca-file '%s': no PEM certificate in it" % p("key-pass")),
    ]
    for args, needle in cases:
        for cc in (False, True):
            rc, text = start_error(args, check_config=cc)
            want = 64 if "--mqtt-key-file:" in needle else 78  # a bad flag: EX_USAGE
            check(rc == want and needle in text, "check-config=%s: exit %d, want %d and %r:\n%s" %
                  (cc, rc, want, needle, text[-1500:]))
    rc, text = start_error(tls_args("relay.crt", "encrypted.key"),
                           env={"OUTBOX_MQTT_KEY_PASSWORD": "wrong"}, check_config=True)
    check(rc == 78 and "cannot be decrypted with the passphrase given" in text, text)
    # A good certificate that expires within 14 days (the test's last 2): a warning, exit 0.
    rc, text = start_error(tls_args("relay.crt", "relay.key"), check_config=True)
    check(rc == 0 and "warning: mqtt-cert-file '%s': the certificate expires on" % p("relay.crt")
          in text, "exit %d:\n%s" % (rc, text[-1500:]))
    # A passphrase is never a flag.
    rc, text = start_error(tls_args("relay.crt", "encrypted.key") +
                           ["--mqtt-key-password", "s3cret-pass"])
    check(rc == 64 and "s3cret-pass" not in text, "exit %d:\n%s" % (rc, text[-800:]))


def test_encrypted_key_with_passphrase_file():
    broker = MtlsBroker("enc")
    sub = Subscriber("outbox/#", uri=broker.uri)
    relay = relay_with("enc", broker, tls_args("relay.crt", "encrypted.key"),
                       env={"OUTBOX_MQTT_KEY_PASSWORD_FILE": p("key-pass")})
    try:
        delivered("enc", broker, relay, sub, [1, 2])
        check("s3cret-pass" not in relay.log_text(), "the passphrase is in the log")
    finally:
        relay.stop()
        sub.close()
        broker.close()


def test_renewed_certificate_is_used_at_reconnect():
    """The certificate and key files are replaced on disk (outbox-relay-a by outbox-relay-b,
    as a renewal with a new key does); the running relay uses the new ones at its next
    connect, here after a broker restart. No SIGHUP is needed."""
    d = os.path.join(CERTS, "live")
    os.makedirs(d, exist_ok=True)
    for src, dst in (("relay.crt", "live/cert.pem"), ("relay.key", "live/key.pem")):
        shutil.copy(p(src), p(dst))
    broker = MtlsBroker("renew")
    sub = Subscriber("outbox/#", uri=broker.uri)
    relay = relay_with("renew", broker, ["--mqtt-ca-file", p("ca.pem"), "--mqtt-cert-file",
                                         p("live/cert.pem"), "--mqtt-key-file", p("live/key.pem")])
    try:
        delivered("renew", broker, relay, sub, [1])
        check("u'outbox-relay-a'" in broker.log_text(), broker.log_text()[-1000:])
        # Renewal as tools do it: write new files, rename them over the old ones.
        for src, dst in (("renewed.crt", "live/cert.pem"), ("renewed.key", "live/key.pem")):
            shutil.copy(p(src), p(dst) + ".new")
            os.rename(p(dst) + ".new", p(dst))
        broker.close()
        broker.start()
        check(wait_until(lambda: "u'outbox-relay-b'" in broker.log_text(), 30),
              "the renewed certificate was not used:\n%s\n%s" % (
                  broker.log_text()[-1500:], relay.log_text()[-2000:]))
        sub.close()
        sub = Subscriber("outbox/#", uri=broker.uri)
        delivered("renew", broker, relay, sub, [7])
    finally:
        relay.stop()
        sub.close()
        broker.close()


def short_lived(name, seconds):
    """A client certificate of the trusted CA (CN outbox-relay-a, key relay.key) that expires
    @seconds from now: `openssl ca` takes an end date to the second."""
    import datetime
    db = os.path.join(CERTS, "cadb")
    os.makedirs(db, exist_ok=True)
    open(os.path.join(db, "index.txt"), "w").close()
    with open(os.path.join(db, "serial"), "w") as f:
        f.write("%02X\n" % (os.getpid() % 200 + 16))
    with open(os.path.join(CERTS, "ca.cnf"), "w") as f:
        f.write("[ca]\ndefault_ca = tca\n[tca]\ndir = .\ndatabase = cadb/index.txt\n"
                "serial = cadb/serial\nnew_certs_dir = cadb\ncertificate = ca.pem\n"
                "private_key = ca.key\ndefault_md = sha256\npolicy = pol\n"
                "unique_subject = no\n[pol]\ncommonName = supplied\n")
    end = datetime.datetime.utcnow() + datetime.timedelta(seconds=seconds)
    openssl("ca", "-batch", "-config", "ca.cnf", "-in", "old.csr", "-out", name,
            "-enddate", end.strftime("%Y%m%d%H%M%SZ"), "-notext")


def test_certificate_expiring_while_running():
    """A certificate that expires while the relay runs: it starts with a warning, publishes;
    after the expiry, at its next connect, the broker refuses it and the warning names the
    relay's mqtt-cert-file as out of date."""
    short_lived("short.crt", 8)
    broker = MtlsBroker("short")
    relay = relay_with("short", broker, tls_args("short.crt", "relay.key"))
    try:
        check(relay.wait_log("mqtt: connected to ssl://"), relay.log_text()[-2000:])
        check("WARN  mqtt: mqtt-cert-file '%s': the certificate expires on" % p("short.crt") in
              relay.log_text(), "no expiry warning at start:\n" + relay.log_text()[-2000:])
        time.sleep(9)  # past the end date (whole seconds, as certificates count)
        broker.close()
        broker.start()
        needle = ("the broker refused the relay's certificate, mqtt-cert-file '%s', as out of "
                  "date" % p("short.crt"))
        check(relay.wait_log(needle, 30), "no %r:\n%s" % (needle, "\n".join(
            ln for ln in relay.log_text().splitlines() if "paho:" not in ln)[-2500:]))
    finally:
        relay.stop()
        broker.close()


def test_replay_takes_the_same_options():
    """outbox-admin replay connects with the relay's certificate options and checks the same
    files (an empty archive: it connects, replays nothing, exits 0)."""
    dbname, cname, _ = names("replay")
    broker = MtlsBroker("replay")
    base = [ADMIN_BIN, "--mongodb-uri", MONGO_URI, "--database", dbname, "--collection", cname,
            "--archive-collection", "archive_mtls", "--mqtt-uri", broker.tls_uri, "replay",
            "--since", "2000-01-01T00:00:00Z"]
    try:
        run = subprocess.run(base + tls_args("relay.crt", "stranger.key"), capture_output=True,
                             text=True, timeout=30)
        check(run.returncode == 78 and "does not match the certificate" in run.stderr,
              "exit %d: %s" % (run.returncode, run.stderr))
        run = subprocess.run(base + tls_args("relay.crt", "encrypted.key"), capture_output=True,
                             text=True, timeout=30,
                             env=dict(os.environ, OUTBOX_MQTT_KEY_PASSWORD_FILE=p("key-pass")))
        check(run.returncode == 0, "exit %d: %s %s" % (run.returncode, run.stdout, run.stderr))
        check("u'outbox-relay-a'" in broker.log_text(), broker.log_text()[-1000:])
    finally:
        broker.close()


TESTS = [test_connects_with_its_certificate, test_broker_refusals_name_the_relays_certificate,
         test_bad_files_are_named_at_start_and_by_check_config,
         test_encrypted_key_with_passphrase_file, test_renewed_certificate_is_used_at_reconnect,
         test_certificate_expiring_while_running,
         test_replay_takes_the_same_options]


def main():
    if not shutil.which("openssl"):
        print("relay-mtls: skip: no openssl command")
        return 77
    if MONGO_URI:
        make_certs()
    return run_tests("relay-mtls", TESTS, sys.argv[3:])


if __name__ == "__main__":
    sys.exit(main())
