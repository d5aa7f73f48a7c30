"""Authentication and authorization as MongoDB 6.0 does them, checked with pymongo 3.11 and
with a SCRAM client written here from RFC 5802/7677 (Python's hashlib/hmac), so the server's
arithmetic is checked independently of any driver: SCRAM-SHA-1 (MongoDB's MD5 password
digest) and SCRAM-SHA-256, the server signature, skipEmptyExchange, speculative
authentication in hello, saslSupportedMechs, and the codes and messages of refusals.

Runs under with-servers --mongod-user NAME:PASSWORD:root [--mongod-tls], or against a real
mongod --auth with root credentials in OUTBOX_TEST_MONGODB_URI; skips (77) otherwise.
usage: test_auth.py [Class[.test_name] ...]
"""
import base64
import hashlib
import hmac
import os
import ssl
import struct
import sys
import unittest
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from servertest import URI, bson, make_client, pymongo  # noqa: E402

DB = "outbox_auth_conformance"
USER, PASSWORD = "conf_user_%d" % os.getpid(), "Conf-pw-Lp02"


def uri_parts():
    parts = urllib.parse.urlsplit(URI)
    host, port = parts.netloc.rsplit("@", 1)[-1].rsplit(":", 1)
    query = dict(urllib.parse.parse_qsl(parts.query))
    return host, int(port), query


class Wire:
    """One raw connection speaking OP_MSG, TLS when the URI says so."""

    def __init__(self):
        import socket
        host, port, query = uri_parts()
        sock = socket.create_connection((host, port), timeout=10)
        if query.get("tls") == "true":
            ctx = ssl.create_default_context(cafile=query.get("tlsCAFile"))
            sock = ctx.wrap_socket(sock, server_hostname=host)
        self.sock = sock
        self.request_id = 0

    def command(self, doc):
        self.request_id += 1
        body = b"\x00\x00\x00\x00" + b"\x00" + bson.BSON.encode(doc)
        self.sock.sendall(struct.pack("<iiii", 16 + len(body), self.request_id, 0, 2013) + body)
        header = self._read(16)
        length = struct.unpack("<i", header[:4])[0]
        rest = self._read(length - 16)
        return bson.BSON(rest[5:]).decode()

    def _read(self, n):
        out = b""
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            if not chunk:
                raise ConnectionError("closed")
            out += chunk
        return out

    def close(self):
        self.sock.close()


class Scram:
    """A SCRAM client per RFC 5802 (and 7677), with MongoDB's SHA-1 password digest."""

    def __init__(self, mech, user, password):
        self.mech = mech
        self.digest = hashlib.sha1 if mech == "SCRAM-SHA-1" else hashlib.sha256
        if mech == "SCRAM-SHA-1":
            password = hashlib.md5(("%s:mongo:%s" % (user, password)).encode()).hexdigest()
        self.password = password.encode()
        self.nonce = base64.b64encode(os.urandom(24)).decode()
        self.first_bare = "n=%s,r=%s" % (user.replace("=", "=3D").replace(",", "=2C"),
                                         self.nonce)

    def client_first(self):
        return ("n,," + self.first_bare).encode()

    def client_final(self, server_first):
        attrs = dict(kv.split("=", 1) for kv in server_first.decode().split(","))
        assert attrs["r"].startswith(self.nonce), "server nonce does not extend ours"
        salted = hashlib.pbkdf2_hmac(self.digest().name, self.password,
                                     base64.b64decode(attrs["s"]), int(attrs["i"]))
        client_key = hmac.new(salted, b"Client Key", self.digest).digest()
        stored_key = self.digest(client_key).digest()
        without_proof = "c=biws,r=%s" % attrs["r"]
        auth_msg = ",".join([self.first_bare, server_first.decode(), without_proof]).encode()
        sig = hmac.new(stored_key, auth_msg, self.digest).digest()
        proof = bytes(a ^ b for a, b in zip(client_key, sig))
        server_key = hmac.new(salted, b"Server Key", self.digest).digest()
        self.server_signature = hmac.new(server_key, auth_msg, self.digest).digest()
        self.iterations = int(attrs["i"])
        self.salt_len = len(base64.b64decode(attrs["s"]))
        return ("%s,p=%s" % (without_proof, base64.b64encode(proof).decode())).encode()

    def check_server_final(self, payload):
        return payload.decode() == "v=" + base64.b64encode(self.server_signature).decode()


class AuthTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.root = make_client()
        cls.root.admin.command("createUser", USER, pwd=PASSWORD,
                               roles=[{"role": "read", "db": DB}])

    @classmethod
    def tearDownClass(cls):
        cls.root.admin.command("dropUser", USER)
        cls.root.close()

    def client_as(self, user, password, **kw):
        host, port, query = uri_parts()
        opts = {k: v for k, v in query.items() if k in ("tls", "tlsCAFile", "directConnection")}
        if "tls" in opts:
            opts["tls"] = opts["tls"] == "true"
        if "directConnection" in opts:
            opts["directConnection"] = opts["directConnection"] == "true"
        c = pymongo.MongoClient(host, port, username=user, password=password,
                                authSource="admin", serverSelectionTimeoutMS=5000,
                                **dict(opts, **kw))
        self.addCleanup(c.close)
        return c


class Mechanisms(AuthTest):
    def conversation(self, mech, skip_empty):
        wire = Wire()
        self.addCleanup(wire.close)
        scram = Scram(mech, USER, PASSWORD)
        start = {"saslStart": 1, "mechanism": mech, "payload": bson.Binary(scram.client_first()),
                 "$db": "admin"}
        if skip_empty:
            start["options"] = {"skipEmptyExchange": True}
        r = wire.command(start)
        self.assertEqual(r["ok"], 1.0, r)
        self.assertFalse(r["done"])
        final = wire.command({"saslContinue": 1, "conversationId": r["conversationId"],
                              "payload": bson.Binary(scram.client_final(r["payload"])),
                              "$db": "admin"})
        self.assertEqual(final["ok"], 1.0, final)
        self.assertTrue(scram.check_server_final(final["payload"]), "bad server signature")
        if not skip_empty:
            self.assertFalse(final["done"])
            last = wire.command({"saslContinue": 1, "conversationId": r["conversationId"],
                                 "payload": bson.Binary(b""), "$db": "admin"})
            self.assertEqual((last["ok"], last["done"]), (1.0, True), last)
        else:
            self.assertTrue(final["done"])
        found = wire.command({"find": "c", "$db": DB})
        self.assertEqual(found["ok"], 1.0, found)
        return scram

    def test_scram_sha1(self):
        scram = self.conversation("SCRAM-SHA-1", skip_empty=False)
        self.assertEqual((scram.iterations, scram.salt_len), (10000, 16))

    def test_scram_sha256(self):
        scram = self.conversation("SCRAM-SHA-256", skip_empty=True)
        self.assertEqual((scram.iterations, scram.salt_len), (15000, 28))

    def test_wrong_proof_is_18(self):
        wire = Wire()
        self.addCleanup(wire.close)
        scram = Scram("SCRAM-SHA-256", USER, "not-the-password")
        r = wire.command({"saslStart": 1, "mechanism": "SCRAM-SHA-256",
                          "payload": bson.Binary(scram.client_first()), "$db": "admin"})
        final = wire.command({"saslContinue": 1, "conversationId": r["conversationId"],
                              "payload": bson.Binary(scram.client_final(r["payload"])),
                              "$db": "admin"})
        self.assertEqual((final["ok"], final["code"], final["codeName"], final["errmsg"]),
                         (0.0, 18, "AuthenticationFailed", "Authentication failed."))
        after = wire.command({"find": "c", "$db": DB})
        self.assertEqual(after["code"], 13)

    def test_speculative_authenticate_in_hello(self):
        wire = Wire()
        self.addCleanup(wire.close)
        scram = Scram("SCRAM-SHA-256", USER, PASSWORD)
        hello = wire.command({"hello": 1, "$db": "admin",
                              "saslSupportedMechs": "admin." + USER,
                              "speculativeAuthenticate": {
                                  "saslStart": 1, "mechanism": "SCRAM-SHA-256",
                                  "payload": bson.Binary(scram.client_first()), "db": "admin",
                                  "options": {"skipEmptyExchange": True}}})
        self.assertEqual(hello["saslSupportedMechs"], ["SCRAM-SHA-1", "SCRAM-SHA-256"])
        spec = hello["speculativeAuthenticate"]
        self.assertFalse(spec["done"])
        final = wire.command({"saslContinue": 1, "conversationId": spec["conversationId"],
                              "payload": bson.Binary(scram.client_final(spec["payload"])),
                              "$db": "admin"})
        self.assertTrue(final["done"] and scram.check_server_final(final["payload"]), final)
        self.assertEqual(wire.command({"find": "c", "$db": DB})["ok"], 1.0)

    def test_speculative_failure_is_left_out(self):
        wire = Wire()
        self.addCleanup(wire.close)
        scram = Scram("SCRAM-SHA-256", "no_such_user", PASSWORD)
        hello = wire.command({"hello": 1, "$db": "admin",
                              "saslSupportedMechs": "admin.no_such_user",
                              "speculativeAuthenticate": {
                                  "saslStart": 1, "mechanism": "SCRAM-SHA-256",
                                  "payload": bson.Binary(scram.client_first()), "db": "admin"}})
        self.assertEqual(hello["ok"], 1.0)
        self.assertNotIn("speculativeAuthenticate", hello)
        self.assertNotIn("saslSupportedMechs", hello)

    def test_unknown_mechanism(self):
        wire = Wire()
        self.addCleanup(wire.close)
        r = wire.command({"saslStart": 1, "mechanism": "PLAIN", "payload": bson.Binary(b"x"),
                          "$db": "admin"})
        self.assertEqual((r["ok"], r["code"]), (0.0, 334), r)

    def test_pymongo_both_mechanisms(self):
        for mech in ("SCRAM-SHA-1", "SCRAM-SHA-256"):
            c = self.client_as(USER, PASSWORD, authMechanism=mech)
            self.assertIsNone(c[DB].c.find_one({"none": 1}), mech)


class Refusals(AuthTest):
    def test_unauthenticated(self):
        wire = Wire()
        self.addCleanup(wire.close)
        for cmd in ({"ping": 1}, {"buildInfo": 1}, {"hello": 1}, {"connectionStatus": 1}):
            self.assertEqual(wire.command(dict(cmd, **{"$db": "admin"}))["ok"], 1.0, cmd)
        r = wire.command({"find": "c", "$db": DB})
        self.assertEqual((r["code"], r["codeName"], r["errmsg"]),
                         (13, "Unauthorized", "command find requires authentication"))

    def test_under_privileged(self):
        c = self.client_as(USER, PASSWORD)
        with self.assertRaises(pymongo.errors.OperationFailure) as cm:
            c[DB].c.insert_one({"x": 1})
        self.assertEqual(cm.exception.code, 13)
        self.assertTrue(str(cm.exception).startswith(
            "not authorized on %s to execute command { insert: \"c\"" % DB), str(cm.exception))
        with self.assertRaises(pymongo.errors.OperationFailure) as cm:
            c.admin.command("serverStatus")
        self.assertEqual(cm.exception.code, 13)

    def test_wrong_password(self):
        c = self.client_as(USER, "Wrong-pw-Qa19")
        with self.assertRaises(pymongo.errors.OperationFailure) as cm:
            c[DB].c.find_one()
        self.assertEqual(cm.exception.code, 18)
        self.assertNotIn("Wrong-pw-Qa19", str(cm.exception.details))

    def test_connection_status_shows_user(self):
        c = self.client_as(USER, PASSWORD)
        info = c.admin.command("connectionStatus")["authInfo"]
        self.assertEqual(info["authenticatedUsers"], [{"user": USER, "db": "admin"}])
        self.assertEqual(info["authenticatedUserRoles"], [{"role": "read", "db": DB}])


def main(argv):
    if not URI:
        print("server-auth: SKIP: OUTBOX_TEST_MONGODB_URI is not set (run under with-servers)")
        return 77
    status = make_client().admin.command("connectionStatus")["authInfo"]
    if {"role": "root", "db": "admin"} not in status["authenticatedUserRoles"]:
        print("server-auth: SKIP: needs a server with authentication and root credentials in "
              "OUTBOX_TEST_MONGODB_URI (with-servers --mongod-user NAME:PASSWORD:root)")
        return 77
    loader = unittest.TestLoader()
    module = sys.modules[__name__]
    suite = (loader.loadTestsFromNames(argv, module) if argv
             else unittest.TestSuite([loader.loadTestsFromTestCase(Mechanisms),
                                      loader.loadTestsFromTestCase(Refusals)]))
    result = unittest.TextTestRunner(verbosity=2).run(suite)
    failed = len(result.failures) + len(result.errors)
    print("server-auth: %d passed, %d failed, %d skipped"
          % (result.testsRun - failed - len(result.skipped), failed, len(result.skipped)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
