#!/usr/bin/python3
# Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
"""outbox-admin against a MongoDB with authentication and TLS (with-servers --mongod-user
NAME:PASSWORD:root --mongod-tls, or a real mongod whose root credentials and TLS options are
in OUTBOX_TEST_MONGODB_URI): the relay's URI options work as they are, a wrong password exits
77 and a wrong CA 69, and no password appears in any output.

usage: test_admin_auth.py OUTBOX_ADMIN   (run under tests/fixtures/with-servers)
"""

import os
import subprocess
import sys
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from relaytest import MONGO_URI, Entities, db_name, pymongo  # noqa: E402

ADMIN_BIN = sys.argv[1]
RUN = "%d" % os.getpid()


def with_password(uri, password):
    parts = urllib.parse.urlsplit(uri)
    user = parts.username or ""
    host = parts.netloc.rsplit("@", 1)[-1]
    netloc = "%s:%s@%s" % (urllib.parse.quote(urllib.parse.unquote(user), safe=""),
                           urllib.parse.quote(password, safe=""), host)
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, parts.query, ""))


def admin(uri, *args):
    env = dict(os.environ, OUTBOX_MONGODB_URI=uri)
    p = subprocess.run([ADMIN_BIN, "--database", db_name("admin_auth_%s" % RUN), "--collection", "things"]
                       + list(args), capture_output=True, text=True, timeout=60, env=env)
    return p.returncode, p.stdout + p.stderr


def main():
    parts = urllib.parse.urlsplit(MONGO_URI) if MONGO_URI else None
    if not parts or not parts.password or "tls=true" not in parts.query.lower():
        print("skip: needs a URI with credentials and tls=true (with-servers "
              "--mongod-user ... --mongod-tls)")
        return 77
    password = urllib.parse.unquote(parts.password)
    client = pymongo.MongoClient(MONGO_URI)
    Entities(client[db_name("admin_auth_%s" % RUN)]["things"]).create("a", 2)
    failures = []
    rc, out = admin(MONGO_URI, "status", "--json")
    if rc != 0 or '"pendingEvents" : 2' not in out:
        failures.append("status with the root URI: %d %s" % (rc, out))
    rc, out2 = admin(with_password(MONGO_URI, "Wrong-pw-1"), "pending")
    if rc != 77:
        failures.append("wrong password: expected 77, got %d %s" % (rc, out2))
    wrong_ca = os.path.join(os.environ.get("OUTBOX_TEST_TLS_DIR", ""), "wrong-ca.pem")
    q = [(k, v) for k, v in urllib.parse.parse_qsl(parts.query) if k != "tlsCAFile"]
    bad = urllib.parse.urlunsplit((parts.scheme, parts.netloc, parts.path,
                                   urllib.parse.urlencode(q + [("tlsCAFile", wrong_ca)],
                                                          safe="/"), ""))
    rc, out3 = admin(bad, "status")
    if os.path.exists(wrong_ca) and rc != 69:
        failures.append("wrong CA: expected 69, got %d %s" % (rc, out3))
    for text in (out, out2, out3):
        if password in text:
            failures.append("the password appears in the output: %s" % text)
    for f in failures:
        print("FAIL %s" % f)
    print("ok   admin-e2e-auth" if not failures else "")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
