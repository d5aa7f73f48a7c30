#!/usr/bin/python3
# Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
#
# contacts-service against what an adversarial pass found (issue 14, items 2 and 8): "\u0000"
# escapes in JSON strings, HEAD, If-Match lists and "*" under concurrency, and 1,100 slow
# connections.
#
# usage: test-contacts-hardening.py PATH/TO/contacts-service  (OUTBOX_TEST_MONGODB_URI set)
import http.client
import os
import resource
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import exampletest

try:
    import pymongo
    from bson import ObjectId
except ImportError:
    print("contacts-hardening: needs pymongo (run with /usr/bin/python3; apt install "
          "python3-pymongo)")
    sys.exit(77)

SERVICE = sys.argv[1]
URI = os.environ["OUTBOX_TEST_MONGODB_URI"]
DB = os.environ.get("OUTBOX_TEST_DB_PREFIX", "") + "contacts_hardening_%d" % os.getpid()
CHECKS = exampletest.Checks("contacts-hardening")
# More than libmicrohttpd's default connection limit (FD_SETSIZE - 4 = 1020): before the
# guard, 1,100 trickling clients left no slot for anyone else.
SLOW = 1100
check = CHECKS.check


def contact(first="Ada", email="ada@example.org"):
    return {"name": {"firstName": first, "lastName": "Lovelace"}, "email": email,
            "description": "d"}


def raw_call(port, method, path, body=None, headers=()):
    """http.client, for what urllib cannot send: repeated header lines, raw JSON text."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.putrequest(method, path)
    for k, v in headers:
        conn.putheader(k, v)
    if body is not None:
        conn.putheader("Content-Type", "application/json")
        conn.putheader("Content-Length", str(len(body)))
    conn.endheaders(body)
    r = conn.getresponse()
    out = (r.status, dict(r.getheaders()), r.read())
    conn.close()
    return out


def test_nul_escapes(c, port, coll, cid):
    """A NUL escape cut the string: "a@b.org\\u0000evil" was stored as "a@b.org"."""
    before = coll.find_one({"_id": ObjectId(cid)})
    evil = b'{"name":{"firstName":"A","lastName":"B"},"email":"a@b.org\\u0000evil"}'
    st, _, body = raw_call(port, "POST", "/contacts", evil)
    check("POST with \\u0000 -> 400", st == 400 and b'"field":"email"' in body, (st, body))
    st, _, body = raw_call(port, "PUT", "/contacts/" + cid, evil, [("If-Match", "*")])
    check("PUT with \\u0000 -> 400", st == 400 and b"NUL" in body, (st, body))
    st, _, body = raw_call(port, "PATCH", "/contacts/" + cid, b'{"description":"x\\u0000y"}',
                           [("If-Match", "*")])
    check("PATCH with \\u0000 -> 400", st == 400 and b'"field":"description"' in body,
          (st, body))
    after = coll.find_one({"_id": ObjectId(cid)})
    check("NUL escapes wrote nothing", after["version"] == before["version"] and
          coll.count_documents({}) == 1, after)


def test_head(c, port, cid):
    g_st, g_h, g_body = raw_call(port, "GET", "/contacts/" + cid)
    h_st, h_h, h_body = raw_call(port, "HEAD", "/contacts/" + cid)
    check("HEAD on a contact -> 200 like GET", h_st == 200 == g_st, (h_st, g_st))
    check("HEAD: the same ETag, type and length, no body",
          h_h.get("ETag") == g_h.get("ETag") and h_h.get("Content-Type") == g_h.get(
              "Content-Type") and h_h.get("Content-Length") == str(len(g_body)) and
          h_body == b"", (h_h, g_h, h_body))
    check("HEAD on a missing contact -> 404", raw_call(port, "HEAD", "/contacts/" +
                                                        "0" * 24)[0] == 404)
    check("HEAD on the list -> 200", raw_call(port, "HEAD", "/contacts")[0] == 200)


def put(port, cid, first, if_match_lines):
    return raw_call(port, "PUT", "/contacts/" + cid,
                    ('{"name":{"firstName":"%s","lastName":"L"},"email":"a@b.org"}' %
                     first).encode(), [("If-Match", v) for v in if_match_lines])


def test_if_match_lists(port, coll, cid):
    """If-Match is a list of entity tags (RFC 9110 13.1.1), possibly over several lines;
    comparison is strong."""
    v = coll.find_one({"_id": ObjectId(cid)})["version"]
    cases = [(['"99", "%d"' % v], 200), (['"98"', '"%d"' % (v + 1)], 200),
             (['W/"%d"' % (v + 2)], 412), (['"x", W/"1", ""'], 412), ([', "%d" ,' % (v + 2)], 200),
             (['*, "1"'], 400), (['"1'], 400), (['1'], 400), (['"1" "2"'], 400)]
    for lines, want in cases:
        st, h, body = put(port, cid, "L%d" % len(lines[0]), lines)
        check("If-Match %r -> %d" % (lines, want), st == want, (st, body))


def test_if_match_any_concurrent(port, coll, cid):
    """If-Match: * holds whatever the version (47 of 100 parallel PUTs got 412): every PUT
    applies, each on the version before it, and none is lost."""
    v0 = coll.find_one({"_id": ObjectId(cid)})["version"]
    events0 = len(coll.find_one({"_id": ObjectId(cid)}).get("events", []))
    with ThreadPoolExecutor(max_workers=20) as pool:
        results = list(pool.map(lambda i: put(port, cid, "Par%d" % i, ["*"]), range(100)))
    statuses = sorted({r[0] for r in results})
    check("100 parallel PUTs with If-Match: * -> all 200", statuses == [200],
          [r[0] for r in results if r[0] != 200][:5])
    etags = {r[1].get("ETag") for r in results}
    doc = coll.find_one({"_id": ObjectId(cid)})
    check("each PUT made its own version", len(etags) == 100 and doc["version"] == v0 + 100,
          (len(etags), doc["version"], v0))
    names = [e for e in doc.get("events", [])[events0:] if e["type"] == "ContactNameUpdated"]
    check("each PUT raised its event", len(names) == 100, len(names))
    st, _, _ = raw_call(port, "PATCH", "/contacts/" + cid, b'{"description":"last"}',
                        [("If-Match", "*")])
    check("PATCH with If-Match: * -> 200", st == 200, st)


def probe(port):
    """GET /healthz answered within 3 s (generous on a loaded machine; before, never)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=3)
    try:
        s.sendall(b"GET /healthz HTTP/1.0\r\n\r\n")
        return s.recv(64).startswith(b"HTTP/1.")
    except OSError:
        return False
    finally:
        s.close()


def test_slow_connections(port, proc):
    """1,100 connections sending a byte a second: the service keeps answering, and the slow
    ones are cut (displaced, or at their request's deadline)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 1200:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4096), hard))
    slow = []
    for _ in range(SLOW):
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
            s.sendall(b"GET /healthz HTTP/1.1\r\nX-Slow: ")
            s.setblocking(False)
            slow.append(s)
        except OSError:
            break
    check("%d slow connections opened" % SLOW, len(slow) == SLOW, len(slow))
    ok = 0
    for i in range(6):
        for s in slow:
            try:
                s.send(b"a")
            except OSError:
                pass
        ok += probe(port)
        time.sleep(0.5)
    check("every probe answered while %d clients trickle" % SLOW, ok == 6, ok)
    cut = 0
    for s in slow:
        try:
            cut += s.recv(1) == b""
        except BlockingIOError:
            pass
        except OSError:
            cut += 1
        s.close()
    check("slow connections are cut", cut > 0, cut)
    check("the service is still up", proc.poll() is None and probe(port))


def test_uri_password_never_printed():
    """mongoc quotes a password it cannot parse; the service's message does not (issue 14,
    6a)."""
    p = subprocess.run([SERVICE, "--mongodb-uri", "mongodb://u:pa:ss-s3cr3t@h/"],
                       capture_output=True, timeout=30)
    err = p.stderr.decode(errors="replace")
    check("a malformed MongoDB URI -> exit 64, password not shown",
          p.returncode == 64 and "s3cr3t" not in err and "Password" in err, (p.returncode, err))


def main():
    test_uri_password_never_printed()
    port = exampletest.free_port()
    proc = subprocess.Popen([SERVICE, "--mongodb-uri", URI, "--database", DB,
                             "--listen", "127.0.0.1:%d" % port], stderr=subprocess.DEVNULL)
    c = exampletest.Client("http://127.0.0.1:%d" % port)
    mongo = pymongo.MongoClient(URI)
    coll = mongo[DB]["contacts"]
    try:
        if not exampletest.wait_healthy(c, proc):
            check("contacts-service starts", False)
        else:
            st, _, body = c.call("POST", "/contacts", contact())
            cid = body["id"] if st == 201 else "0" * 24
            test_nul_escapes(c, port, coll, cid)
            test_head(c, port, cid)
            test_if_match_lists(port, coll, cid)
            test_if_match_any_concurrent(port, coll, cid)
            test_slow_connections(port, proc)
    finally:
        status, _ = exampletest.stop(proc, 10)
        check("contacts-service exits 0 on SIGTERM", status == 0, status)
        mongo.drop_database(DB)
        mongo.close()
    return CHECKS.summary()


if __name__ == "__main__":
    sys.exit(main())
