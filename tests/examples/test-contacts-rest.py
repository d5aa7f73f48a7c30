#!/usr/bin/python3
# Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
#
# The contacts REST API end to end: every status code, that bad input writes nothing, stable
# paging, and the events each scenario stores (read straight from MongoDB with pymongo, with no
# relay running, so the events array holds everything the service appended).
#
# usage: test-contacts-rest.py PATH/TO/contacts-service   (OUTBOX_TEST_MONGODB_URI must be set)
import http.client
import json
import os
import subprocess
import sys
import threading

import exampletest

try:
    import pymongo
    from bson import ObjectId
except ImportError:
    print("contacts-rest: needs pymongo (run with /usr/bin/python3; apt install python3-pymongo)")
    sys.exit(77)

SERVICE = sys.argv[1]
URI = os.environ["OUTBOX_TEST_MONGODB_URI"]
DB = os.environ.get("OUTBOX_TEST_DB_PREFIX", "") + "contacts_rest_%d" % os.getpid()
CHECKS = exampletest.Checks("contacts-rest")
check = CHECKS.check


free_port = exampletest.free_port
Client = exampletest.Client
wait_healthy = exampletest.wait_healthy


def contact(first="Ada", last="Lovelace", email="ada@example.org", company="Analytical Engines"):
    body = {"name": {"firstName": first, "lastName": last}, "email": email,
            "description": "wrote the first program"}
    if company is not None:
        body["company"] = {"companyName": company, "street": "St James's Square",
                           "houseNumber": "12", "postalCode": "SW1Y 4JH", "city": "London",
                           "country": "UK"}
    return body


def stored(coll, cid):
    return coll.find_one({"_id": ObjectId(cid)})


def event_types(doc):
    return [(e["type"], e["seq"]) for e in doc.get("events", [])]


def test_create_get(c, coll):
    st, h, body = c.call("POST", "/contacts", contact())
    check("POST -> 201", st == 201, st)
    check("POST Location", h.get("Location") == "/contacts/" + body["id"], h.get("Location"))
    check("POST ETag", h.get("ETag") == '"1"', h.get("ETag"))
    cid = body["id"]
    doc = stored(coll, cid)
    check("created: one ContactCreated event", event_types(doc) == [("ContactCreated", 1)],
          event_types(doc))
    check("created: version 1, eventSeq 1", doc["version"] == 1 and doc["eventSeq"] == 1)
    check("created: event data", doc["events"][0]["data"]["name"]["firstName"] == "Ada")
    st, h, body = c.call("GET", "/contacts/" + cid)
    check("GET -> 200", st == 200 and body["email"] == "ada@example.org", st)
    check("GET ETag", h.get("ETag") == '"1"', h.get("ETag"))
    check("GET unknown -> 404", c.call("GET", "/contacts/" + str(ObjectId()))[0] == 404)
    st, _, body = c.call("GET", "/contacts/not-an-id")
    check("GET bad id -> 400", st == 400 and body["error"] == "invalid-id", (st, body))
    return cid


def test_updates(c, coll, cid):
    new = contact(first="Augusta", last="King")
    st, _, body = c.call("PUT", "/contacts/" + cid, new)
    check("PUT without If-Match -> 428", st == 428, st)
    st, h, _ = c.call("PUT", "/contacts/" + cid, new, {"If-Match": '"7"'})
    check("PUT stale -> 412 with current ETag", st == 412 and h.get("ETag") == '"1"', (st, h))
    st, h, body = c.call("PUT", "/contacts/" + cid, new, {"If-Match": '"1"'})
    check("PUT rename -> 200", st == 200 and h.get("ETag") == '"2"', (st, h.get("ETag")))
    check("PUT returns new state", body["name"]["firstName"] == "Augusta")
    doc = stored(coll, cid)
    check("rename: ContactNameUpdated", event_types(doc)[-1] == ("ContactNameUpdated", 2),
          event_types(doc))
    new2 = contact(first="Augusta", last="King", email="augusta@king.org", company="Babbage & Co")
    st, h, _ = c.call("PUT", "/contacts/" + cid, new2, {"If-Match": '"2"'})
    check("PUT email+company -> 200", st == 200 and h.get("ETag") == '"3"', (st, h.get("ETag")))
    doc = stored(coll, cid)
    check("email+company: two events in one commit",
          event_types(doc)[-2:] == [("ContactEmailUpdated", 3), ("ContactCompanyUpdated", 4)],
          event_types(doc))
    st, h, _ = c.call("PUT", "/contacts/" + cid, new2, {"If-Match": '"3"'})
    check("PUT unchanged -> 200, same ETag", st == 200 and h.get("ETag") == '"3"', h.get("ETag"))
    check("PUT unchanged writes nothing", stored(coll, cid)["version"] == 3)
    new2["description"] = "Countess of Lovelace"
    st, h, _ = c.call("PUT", "/contacts/" + cid, new2, {"If-Match": "*"})
    check("PUT description with If-Match * -> 200", st == 200 and h.get("ETag") == '"4"', h)
    doc = stored(coll, cid)
    check("description: new version, no event", doc["version"] == 4 and doc["eventSeq"] == 4,
          (doc["version"], doc["eventSeq"]))
    return doc


BAD_BODIES = [
    ("invalid JSON", b'{"name": '),
    ("array", b'[1, 2]'),
    ("empty body", b''),
    ("wrong type", json.dumps(dict(contact(), email=42)).encode()),
    ("unknown field", json.dumps(dict(contact(), age=3)).encode()),
    ("read-only field", json.dumps(dict(contact(), createdAt="2020-01-01")).encode()),
    ("blank first name", json.dumps(contact(first="  ")).encode()),
    ("invalid email", json.dumps(contact(email="ada@")).encode()),
    ("missing name", json.dumps({"email": "a@b.co"}).encode()),
    ("nested unknown", json.dumps(dict(contact(), name={"firstName": "A", "lastName": "B",
                                                       "x": "y"})).encode()),
    ("NUL byte", b'{"name": {"firstName": "A\x00", "lastName": "B"}, "email": "a@b.co"}'),
    ("invalid UTF-8", b'{"name": {"firstName": "\xff", "lastName": "B"}, "email": "a@b.co"}'),
    ("invalid UTF-8 key", b'{"\xc3": 1, "name": {"firstName": "A", "lastName": "B"}}'),
    ("lone surrogate", b'{"name": {"firstName": "\\ud800", "lastName": "B"}, "email": "a@b.co"}'),
    ("two objects", json.dumps(contact()).encode() * 2),
    ("Extended JSON", json.dumps(dict(contact(), email={"$date": 1})).encode()),
]


def post_chunked(c, path, raw):
    """POST without Content-Length, so the size is only known while reading."""
    host, port = c.base.split("//")[1].split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    conn.putrequest("POST", path)
    conn.putheader("Content-Type", "application/json")
    conn.putheader("Transfer-Encoding", "chunked")
    conn.endheaders()
    for i in range(0, len(raw), 8192):
        chunk = raw[i:i + 8192]
        conn.send(b"%x\r\n" % len(chunk) + chunk + b"\r\n")
    conn.send(b"0\r\n\r\n")
    status = conn.getresponse().status
    conn.close()
    return status


def test_hostile_ids(c, cid, before):
    # A percent-encoded NUL must not cut the path down to a valid id.
    for method, hdrs in (("GET", None), ("PUT", {"If-Match": '"%d"' % before["version"]}),
                         ("DELETE", {"If-Match": "*"})):
        st, _, body = c.call(method, "/contacts/%s%%00x" % cid, contact() if method == "PUT"
                             else None, hdrs)
        check("%s id%%00... -> 400 invalid-id" % method, st == 400 and isinstance(body, dict)
              and body.get("error") == "invalid-id", (st, body))
    st, _, _ = c.call("GET", "/contacts/" + "a" * 5000)
    check("GET very long id -> 400", st == 400, st)
    st, _, _ = c.call("GET", "/contacts?continuationToken=%s%%00" % cid)
    check("continuationToken with NUL -> 400", st == 400, st)
    st, _, _ = c.call("GET", "/contacts?pageSize=1%00")
    check("pageSize with NUL -> 400", st == 400, st)


def test_bad_input(c, coll, cid, before):
    count = coll.count_documents({})
    for name, raw in BAD_BODIES:
        st, _, body = c.call("POST", "/contacts", raw=raw)
        ok = st == 400 and isinstance(body, dict) and body.get("message")
        check("POST %s -> 400 with message" % name, ok, (st, body))
        st, _, body = c.call("PUT", "/contacts/" + cid, raw=raw,
                             headers={"If-Match": '"%d"' % before["version"]})
        check("PUT %s -> 400" % name, st == 400, (st, body))
    st, _, _ = c.call("POST", "/contacts", raw=b"x" * (100 * 1024))
    check("POST huge body -> 413", st == 413, st)
    check("POST huge chunked body -> 413", post_chunked(c, "/contacts", b"x" * (200 * 1024)) == 413)
    test_hostile_ids(c, cid, before)
    st, _, _ = c.call("POST", "/contacts", raw=json.dumps(contact()).encode(),
                      headers={"Content-Type": "text/plain"})
    check("POST wrong content type -> 415", st == 415, st)
    st, _, _ = c.call("PUT", "/contacts/" + cid, contact(), {"If-Match": "3"})
    check("PUT malformed If-Match -> 400", st == 400, st)
    check("bad input wrote no contact", coll.count_documents({}) == count)
    after = stored(coll, cid)
    check("bad input left the contact as it was", after == before)


def patch(c, cid, doc, version, ctype="application/merge-patch+json"):
    return c.call("PATCH", "/contacts/" + cid, raw=json.dumps(doc).encode(),
                  headers={"Content-Type": ctype, "If-Match": '"%d"' % version})


def test_patch(c, coll, cid):
    v = stored(coll, cid)["version"]
    n = len(event_types(stored(coll, cid)))
    st, h, body = patch(c, cid, {"email": "patched@king.org"}, v)
    check("PATCH email -> 200 with new ETag", st == 200 and h.get("ETag") == '"%d"' % (v + 1),
          (st, h.get("ETag"), body))
    check("PATCH keeps the rest", body["name"]["firstName"] == "Augusta" and
          body["company"]["companyName"] == "Babbage & Co", body)
    evs = event_types(stored(coll, cid))
    check("PATCH email: only ContactEmailUpdated", [t for t, _ in evs[n:]] ==
          ["ContactEmailUpdated"], evs)
    st, _, body = patch(c, cid, {"name": {"lastName": "Byron"}, "company": {"city": "Ockham"}},
                        v + 1, "application/json")
    check("PATCH nested members -> 200", st == 200 and body["name"] ==
          {"firstName": "Augusta", "lastName": "Byron"} and body["company"]["city"] == "Ockham"
          and body["company"]["companyName"] == "Babbage & Co", (st, body))
    evs = event_types(stored(coll, cid))
    check("PATCH name and company: two events", [t for t, _ in evs[n + 1:]] ==
          ["ContactNameUpdated", "ContactCompanyUpdated"], evs)
    st, _, body = patch(c, cid, {"company": None}, v + 2)
    check("PATCH company null removes it", st == 200 and body["company"] is None, (st, body))
    before = stored(coll, cid)
    for bad, why in (({"name": None}, "removing the name"), ({"age": 3}, "unknown field"),
                     ({"email": "nope"}, "invalid email"), ({"id": "x"}, "read-only field"),
                     ({"company": {"city": "X"}}, "company without companyName")):
        st, _, body = patch(c, cid, bad, v + 3)
        check("PATCH %s -> 400" % why, st == 400 and body.get("message"), (st, body))
    st, _, _ = c.call("PATCH", "/contacts/" + cid, raw=b'{"email": "a@b.co", "email": "c@d.co"}',
                      headers={"Content-Type": "application/merge-patch+json",
                               "If-Match": '"%d"' % (v + 3)})
    check("PATCH duplicate keys -> 400", st == 400, st)
    st, _, _ = c.call("PATCH", "/contacts/" + cid, {"email": "a@b.co"})
    check("PATCH without If-Match -> 428", st == 428, st)
    st, _, _ = patch(c, cid, {"email": "a@b.co"}, v + 3, "text/plain")
    check("PATCH wrong content type -> 415", st == 415, st)
    st, _, _ = patch(c, cid, {"email": "a@b.co"}, v)
    check("PATCH stale -> 412", st == 412, st)
    check("bad PATCHes wrote nothing", stored(coll, cid) == before)


def test_methods(c, cid):
    st, h, _ = c.call("POST", "/contacts/" + cid, contact())
    check("POST on an item -> 405 with Allow", st == 405 and "PUT" in h.get("Allow", ""), h)
    check("unknown path -> 404", c.call("GET", "/nothing")[0] == 404)


def test_race(c, cid, version):
    out = []

    def put(first):
        out.append(c.call("PUT", "/contacts/" + cid, contact(first=first, email="r@x.org"),
                          {"If-Match": '"%d"' % version})[0])
    threads = [threading.Thread(target=put, args=(n,)) for n in ("Racer", "Runner")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    check("concurrent PUTs: one 200, one 412", sorted(out) == [200, 412], out)


def test_delete(c, coll, cid):
    version = stored(coll, cid)["version"]
    check("DELETE without If-Match -> 428", c.call("DELETE", "/contacts/" + cid)[0] == 428)
    st, h, _ = c.call("DELETE", "/contacts/" + cid, headers={"If-Match": '"%d"' % (version - 1)})
    check("DELETE stale -> 412", st == 412 and h.get("ETag") == '"%d"' % version, (st, h))
    st, _, _ = c.call("DELETE", "/contacts/" + cid, headers={"If-Match": '"%d"' % version})
    check("DELETE -> 204", st == 204, st)
    doc = stored(coll, cid)
    check("delete: soft, with ContactDeleted", doc["deleted"] is True and
          event_types(doc)[-1][0] == "ContactDeleted", event_types(doc))
    check("GET deleted -> 404", c.call("GET", "/contacts/" + cid)[0] == 404)
    st, _, _ = c.call("DELETE", "/contacts/" + cid, headers={"If-Match": '"%d"' % (version + 1)})
    check("DELETE deleted -> 404", st == 404, st)
    st, _, _ = c.call("PUT", "/contacts/" + cid, contact(), {"If-Match": '"%d"' % (version + 1)})
    check("PUT deleted -> 404", st == 404, st)


def all_pages(c, size):
    ids, token, pages = [], None, 0
    while True:
        path = "/contacts?pageSize=%d" % size + ("&continuationToken=" + token if token else "")
        st, _, body = c.call("GET", path)
        if st != 200:
            return None, pages
        ids += [i["id"] for i in body["items"]]
        pages += 1
        token = body["continuationToken"]
        if token is None or pages > 50:
            return ids, pages


def test_paging(c, deleted_id):
    created = [c.call("POST", "/contacts", contact(first="P%d" % i, email="p%d@x.org" % i))[2]["id"]
               for i in range(5)]
    ids, pages = all_pages(c, 2)
    check("paging returns every live contact once", ids is not None and
          sorted(ids) == sorted(set(ids)) and set(created) <= set(ids), ids)
    check("paging excludes deleted", ids is not None and deleted_id not in ids)
    check("paging in pages of 2", pages >= 3, pages)
    st, _, first = c.call("GET", "/contacts?pageSize=2")
    late = c.call("POST", "/contacts", contact(first="Late", email="late@x.org"))[2]["id"]
    rest, _ = all_pages_from(c, first["continuationToken"])
    seen = [i["id"] for i in first["items"]] + rest
    check("a contact created meanwhile shows up once, at the end",
          seen.count(late) == 1 and seen[-1] == late and len(seen) == len(set(seen)), seen)
    for q, why in (("pageSize=0", "zero"), ("pageSize=101", "too big"), ("pageSize=x", "text"),
                   ("continuationToken=zzz", "bad token"), ("page=2", "unknown parameter")):
        st, _, body = c.call("GET", "/contacts?" + q)
        check("list %s -> 400" % why, st == 400 and body.get("message"), (st, body))


def all_pages_from(c, token):
    ids = []
    while token:
        st, _, body = c.call("GET", "/contacts?pageSize=2&continuationToken=" + token)
        if st != 200:
            return None, 0
        ids += [i["id"] for i in body["items"]]
        token = body["continuationToken"]
    return ids, 0


def main():
    port = free_port()
    proc = subprocess.Popen([SERVICE, "--mongodb-uri", URI, "--database", DB,
                             "--listen", "127.0.0.1:%d" % port], stderr=subprocess.PIPE)
    c = Client("http://127.0.0.1:%d" % port)
    mongo = pymongo.MongoClient(URI)
    coll = mongo[DB]["contacts"]
    try:
        if not wait_healthy(c, proc):
            check("contacts-service starts", False)
        else:
            cid = test_create_get(c, coll)
            doc = test_updates(c, coll, cid)
            test_bad_input(c, coll, cid, doc)
            test_patch(c, coll, cid)
            test_methods(c, cid)
            test_race(c, cid, stored(coll, cid)["version"])
            test_delete(c, coll, cid)
            test_paging(c, cid)
    finally:
        status, err = exampletest.stop(proc, 10)
        check("contacts-service exits 0 on SIGTERM", status == 0, status)
        if CHECKS.failed:
            sys.stdout.write(err.decode(errors="replace")[-3000:])
        mongo.drop_database(DB)
        mongo.close()
    return CHECKS.summary()


if __name__ == "__main__":
    sys.exit(main())
