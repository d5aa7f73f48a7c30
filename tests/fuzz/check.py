# Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
"""The fuzzer's judge: one property per case, from what the subscriber received, what is
stored (documents, dead letters, the archive) and what the writer said.

  refused        the writer refused it with a message, and nothing was stored;
  published      delivered at least once, every copy equal to the stored event (the
                 documented normalisation: data as relaxed extended JSON, time as RFC 3339 in
                 milliseconds, headers the table leaves out missing, the rest as user
                 properties and, named like CloudEvents attributes, attributes), archived
                 when the archive is on;
  dead-lettered  in its document's dead letters with the reason the table names, and never
                 published.
A raw case's second, valid event is published in every case."""
import base64
import datetime
import json
import re

from bsonenc import Date, Int32, Int64, Raw, value_doc

ENTITY_RULES = ("entity _id", "message topic")  # rules about the entity, not one event
OWN = {"event-id", "event-type", "entity-id", "seq"}
BINARY_ATTRS = {"specversion", "id", "source", "type", "subject", "time"}
RFC3339_MS = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\Z")
CE_ATTR = re.compile(r"[a-z0-9]{1,20}\Z")


def relaxed(v):
    """What the relay's relaxed extended JSON of a value parses back to."""
    if isinstance(v, dict):
        return {k: relaxed(x) for k, x in v.items()}
    if isinstance(v, list):
        return [relaxed(x) for x in v]
    if isinstance(v, (Int32, Int64)):
        return int(v)
    return v


def rfc3339(ms):
    d = datetime.datetime(1970, 1, 1) + datetime.timedelta(milliseconds=ms)
    return "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ" % (d.year, d.month, d.day, d.hour, d.minute,
                                                      d.second, d.microsecond // 1000)


def message_event_id(payload, props, binary):
    if binary:
        for k, v in props:
            if k == "id":
                return v
        return None
    try:
        return json.loads(payload.decode("utf-8")).get("id")
    except (ValueError, UnicodeDecodeError, AttributeError):
        return None


class Judge:
    def __init__(self, run, cases, messages, db, coll, archive):
        self.run, self.cases, self.db, self.coll, self.archive = run, cases, db, coll, archive
        self.by_id = {}
        # Entities some case stored (a MinKey or null id cannot be made unique per case).
        self.stored = {value_doc("_id", c["entity"]) for c in cases
                       if c["expect"] != "refused"}
        self.problems = []
        for msg in messages:
            topic, payload, props, _ = msg
            if not topic.startswith(run["topic_root"] + "/"):
                continue
            eid = message_event_id(payload, props, run["binary"])
            self.by_id.setdefault(eid, []).append(msg)

    def labels(self):
        """Event id -> "rule: what" of its case (the second events of raw cases too)."""
        out = {}
        for c in self.cases:
            eid = self.event_of(c)[0] if c.get("result", {}).get("ok") else None
            if isinstance(eid, str):
                out[eid] = "%s: %s" % (c["rule"], c["what"])
                if c.get("follow"):
                    out[c["follow"]["id"]] = "%s: %s (its second event)" % (c["rule"], c["what"])
        return out

    def fail(self, case, what):
        self.problems.append("case %d (%s, %s: %s): %s" % (case["n"], case["writer"],
                                                           case["rule"], case["what"], what))

    def event_of(self, case):
        """(id, seq, type, time ms or None, data, headers) as stored."""
        if case["writer"] == "lib":
            spec, res = case["lib"], case["result"]
            return (res["id"], res["seq"], spec["type"], "lib", spec.get("binary", spec["data"]),
                    dict(spec["headers"]))
        if case["writer"] == "example":  # its time is the writer's clock: present, not known
            spec, res = case["example"], case["result"]
            return res["id"], 1, spec["type"], "lib", spec["data"], {}
        ev = case["event"]
        return (ev.get("id"), ev.get("seq"), ev.get("type"), ev.get("time"), ev.get("data"),
                ev.get("headers"))

    def judge(self, case):
        res = case.get("result")
        if res is None:
            return self.fail(case, "the writer said nothing about it")
        if case["expect"] == "refused":
            if res["ok"]:
                return self.fail(case, "stored (event %s), expected refused at write" % res["id"])
            if not res["message"]:
                self.fail(case, "refused without a message")
            if value_doc("_id", case["entity"]) not in self.stored and \
                    self.stored_doc(case) is not None:
                self.fail(case, "refused, but its entity was stored")
            return "refused"
        if not res["ok"]:
            if case.get("may_refuse") and res["message"]:
                return "refused"  # an example writer refusing what liboutbox refuses
            return self.fail(case, "refused at write (%s), expected %s" % (res["message"],
                                                                           case["expect"]))
        if case["writer"] == "raw":
            self.check_follow(case)
        if case["expect"] == "dead-lettered":
            return self.check_dead(case)
        if case["expect"] == "expired":
            return self.check_expired(case)
        return self.check_published(case)

    def stored_doc(self, case):
        """The case's document: only what the judge reads, since a stored event may hold what
        pymongo cannot decode (a date outside Python's years, invalid UTF-8)."""
        proj = {"deadLetters.reason": 1, "deadLetters.event.id": 1}
        ent = case["entity"]
        if not isinstance(ent, Raw):
            return self.coll.find_one({"_id": ent}, proj)
        # An id of invalid UTF-8 cannot be sent as a filter by pymongo: compare ids decoded
        # with U+FFFD (the collection's codec options) instead.
        lossy = ent.data.decode("utf-8", "replace")
        for doc in self.coll.find({"_id": {"$type": "string"}}, proj):
            if doc["_id"] == lossy:
                return doc
        return None

    def check_dead(self, case):
        doc = self.stored_doc(case)
        dls = (doc or {}).get("deadLetters", [])
        eid = self.event_of(case)[0]
        if not dls:
            return self.fail(case, "not dead-lettered (document %s)" %
                             ("gone" if doc is None else "has no dead letters"))
        reasons = [d.get("reason") for d in dls]
        if case["reason"] not in reasons:
            self.fail(case, "dead-lettered with reason %r, the table says %r" % (reasons,
                                                                                 case["reason"]))
        if isinstance(eid, str) and eid in self.by_id:
            self.fail(case, "dead-lettered and published")
        return "dead-lettered"

    def check_expired(self, case):
        """Expired before its turn (--expired-events drop, the default): never published, no
        dead letter, cleared; archived first when the archive is on."""
        eid = self.event_of(case)[0]
        if eid in self.by_id:
            self.fail(case, "published, but it expired before its turn")
        doc = self.stored_doc(case)
        if (doc or {}).get("deadLetters"):
            self.fail(case, "dead-lettered, but expired events are dropped by default")
        if self.archive is not None and self.archive.find_one({"_id": eid}, {"_id": 1}) is None:
            self.fail(case, "expired and dropped, but not archived first")
        return "expired"

    def check_follow(self, case):
        """The entity's second, valid event: published, unless what is wrong is the entity
        itself (its id cannot be rendered, its topic is too long): then it shares the first
        one's dead letter reason."""
        fid = case["follow"]["id"]
        if case["expect"] == "dead-lettered" and case["rule"] in ENTITY_RULES:
            if fid in self.by_id:
                self.fail(case, "published the second event of an entity the table refuses")
            doc = self.stored_doc(case)
            if len((doc or {}).get("deadLetters", [])) != 2:
                self.fail(case, "the entity's second event was not dead-lettered too")
        elif fid not in self.by_id:
            self.fail(case, "the entity's valid second event was not published")

    def check_published(self, case):
        eid, seq, etype, tm, data, headers = self.event_of(case)
        copies = self.by_id.get(eid)
        if not copies:
            doc = self.stored_doc(case)
            dl = [d.get("reason") for d in (doc or {}).get("deadLetters", [])]
            return self.fail(case, "not published%s" % (" (dead-lettered: %s)" % dl if dl else
                                                        " and not dead-lettered"))
        for topic, payload, props, expiry in copies:
            self.check_copy(case, seq, etype, tm, data, headers, payload, props)
            self.check_expiry(case, expiry)
        if self.archive is not None:
            a = self.archive.find_one({"_id": eid}, {"seq": 1, "type": 1, "headers": 1})
            kept = case["kept"] if case["kept"] is not None else (headers or {})
            if a is None:
                self.fail(case, "published but not archived")
            elif (a.get("seq"), a.get("type"), a.get("headers") or {}) != (seq, etype, kept):
                self.fail(case, "archived as seq %r type %r headers %r, published as %r %r %r"
                          % (a.get("seq"), a.get("type"), a.get("headers"), seq, etype, kept))
        return "left out" if case["dropped"] else "published"

    def check_expiry(self, case, expiry):
        """MQTT 5: an event with expiresAt carries the time left, in seconds rounded up, at
        most what the four-byte interval holds; one without has none (no --message-expiry)."""
        if not self.run["v5"]:
            return
        exp = (case.get("event") or {}).get("expiresAt") or \
            (case.get("lib") or {}).get("expires_at")
        if not isinstance(exp, int) or isinstance(exp, bool):
            if expiry is not None:
                self.fail(case, "Message Expiry Interval %s on an event without expiresAt"
                          % expiry)
            return
        # Sent between the cases' making (gen_ms) and now; the broker counts down while the
        # message waits. The relay sends 2^31 - 1 s at most (relay/mqtt/expiry.c: paho writes
        # larger four-byte integers wrongly).
        cap = 2 ** 31 - 1
        most = min(-(-(exp - self.run["gen_ms"]) // 1000), cap)
        least = min((exp - self.run["now_ms"]) // 1000, cap) - 600
        if expiry is None or not (least <= expiry <= most):
            self.fail(case, "Message Expiry Interval %r, expected %d..%d" % (expiry, least,
                                                                             most))

    def check_copy(self, case, seq, etype, tm, data, headers, payload, props):
        run = self.run
        kept = case["kept"] if case["kept"] is not None else (headers or {})
        pd = dict(props)
        if run["binary"] and isinstance(data, bytes):  # binary data: the bytes as they are
            if payload != data:
                self.fail(case, "binary payload %r != data %r" % (payload[:40], data[:40]))
            attrs = pd
        elif run["binary"]:
            try:
                got = json.loads(payload.decode("utf-8"))
            except ValueError as e:
                return self.fail(case, "binary payload is not JSON: %s" % e)
            if got != relaxed(data):
                self.fail(case, "binary payload %r != data %r" % (got, relaxed(data)))
            attrs = pd
        else:
            try:
                ce = json.loads(payload.decode("utf-8"))
            except ValueError as e:
                return self.fail(case, "structured payload is not JSON: %s" % e)
            if isinstance(data, bytes):  # CloudEvents' data_base64, no data
                if ce.get("data_base64") != base64.b64encode(data).decode() or "data" in ce:
                    self.fail(case, "data_base64 %r != stored %r" % (ce.get("data_base64"),
                                                                     data[:40]))
            elif ce.get("data") != relaxed(data):
                self.fail(case, "data %r != stored %r" % (ce.get("data"), relaxed(data)))
            attrs = ce
        if str(attrs.get("seq")) != str(int(seq)):
            self.fail(case, "seq %r != stored %r" % (attrs.get("seq"), seq))
        if attrs.get("type") != etype:
            self.fail(case, "type %r != stored %r" % (attrs.get("type"), etype))
        if isinstance(tm, Date) and attrs.get("time") != rfc3339(tm):
            self.fail(case, "time %r != stored %s" % (attrs.get("time"), rfc3339(tm)))
        if tm == "lib" and not RFC3339_MS.match(str(attrs.get("time"))):
            self.fail(case, "time %r is not RFC 3339 in milliseconds" % attrs.get("time"))
        if tm is None and "time" in attrs:
            self.fail(case, "time %r, but the event has none" % attrs.get("time"))
        for name, value in kept.items():
            if run["v5"] and (name, value) not in props:
                self.fail(case, "header %r missing from the user properties" % name)
            if not run["binary"] and CE_ATTR.match(name) and ce.get(name) != value:
                self.fail(case, "header %r not an attribute (got %r)" % (name, ce.get(name)))
        names = [k for k, _ in props]
        for name in set(names):
            if names.count(name) > 1:
                self.fail(case, "user property %r given %d times" % (name, names.count(name)))
        allowed = OWN | (BINARY_ATTRS if run["binary"] else set()) | set(kept)
        for name in set(names) - allowed:
            self.fail(case, "user property %r is neither the relay's nor a kept header" % name)
