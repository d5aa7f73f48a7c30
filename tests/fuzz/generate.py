# Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
"""The fuzzer's cases, made from liboutbox's contract table (fuzz-contract prints it): for
every rule, values inside its form, at every bound it has, and breaking it once (a type it
does not allow, one past a bound, each text rule it names, missing when required), each case
with the outcome the table gives it. Raw writers (pymongo, the Node driver) store whole
events and are judged by the `accepted` form and the rule's `outcome`; liboutbox's callers
give type, data, headers and the entity id and are judged by `written` and `at_write`.

Every case has its own entity, so outcomes never mix; a raw case's entity also gets a valid
second event (seq 2) after the one under test, which must be published whatever happened to
the first (an entity is never held up by a bad event)."""
import random
import uuid

from bson import ObjectId
from bson.decimal128 import Decimal128
from bson.max_key import MaxKey
from bson.min_key import MinKey

from bsonenc import Date, Int32, Int64, Pairs, Raw

REFUSED, PUBLISHED, DEAD = "refused", "published", "dead-lettered"
EXPIRED = "expired"  # expiresAt passed before its turn: cleared unpublished (--expired-events drop)
NEW = object()  # add(): a fresh entity of its own
NOW_MS = None  # set by cases(): one commit time for the run
_RNG = random.Random(0)  # set by cases(): ids come from the seed too


def _uuid():
    return str(uuid.UUID(int=_RNG.getrandbits(128), version=4))

# Strings that break each text rule once (MQTT 5 section 1.5.4: controls, non-characters).
BAD_TEXT = {
    "utf8": [Raw(b"fz\xff"), Raw(b"fz\xed\xa0\x80"), Raw(b"fz\xc0\xaf")],
    "no_nul": ["fz\x00z"],
    "mqtt": ["fz\ufffe", "fz\uffff", "fz\ufdd0", "fz\ufdef", "fz\U0001fffe", "fz\U0010ffff",
             "fz\x01", "fz\x1f", "fz\x7f", "fz\x85", "fz\x9f"],
    "event_type": ["a b", "a/b", "caf\u00e9", "a+b"],
    "no_dollar": ["$fz"],
}
# Strings every MQTT text rule keeps (the edges of what is allowed).
GOOD_TEXT = ["fz \u00a0\u00e9", "fz\ufdcf\ufdf0\ufffd", "fz\U0001f600", "fz\U0010fffd", "fz~!"]
TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


def _type_samples(rng, n):
    """One value of each BSON type the fuzzer writes, by the table's type names."""
    return {
        "double": 1.5 + n, "string": "fz-%d" % n, "object": {"fz": Int32(n)},
        "array": [Int32(n)], "binData": b"fz%d" % n, "objectId": ObjectId(bytes(_RNG.getrandbits(8) for _ in range(12))),
        "bool": bool(n % 2), "date": Date(NOW_MS), "null": None, "int": Int32(n),
        "long": Int64(n), "decimal": Decimal128("%d.5" % n), "minKey": MinKey(),
        "maxKey": MaxKey(),
    }


def _strings(form, rng, base):
    """(value, valid) strings for a string form: bounds and text rules."""
    out = []
    lo, hi, text = form["min"], form["max"], list(form["text"])  # in order: reproducible
    pad = "event_type" in text and "a" or "x"
    if lo is not None:
        out.append((pad * max(lo, 1) if lo > 0 else "", True))
        if lo > 0:
            out.append((pad * (lo - 1), False))
    if hi is not None and hi <= 70000:
        out.append((pad * hi, True))
        out.append((pad * (hi + 1), False))
    for rule in text:
        for bad in rng.sample(BAD_TEXT.get(rule, []), min(2, len(BAD_TEXT.get(rule, [])))):
            out.append((bad, False))
    if "mqtt" in text or "utf8" in text:
        out.append((rng.choice(GOOD_TEXT) + base, True))
    return out


def _types(form, rng, n, skip=()):
    """(value, valid) one per type: the allowed ones (a few) and every other one."""
    samples = _type_samples(rng, n)
    out = []
    for name, v in samples.items():
        if name in skip:
            continue
        if name not in form["types"]:
            out.append((v, False))
    return out


def _bounded(form, cls, limit):
    """(value, valid) at and one past each bound of an integer or date form; without a
    lower bound, 1 (a date: an hour from now). Values a type cannot hold are left out."""
    out = []
    lo, hi = form["min"], form["max"]
    if lo is not None:
        out += [(cls(lo), True), (cls(lo - 1), False)]
    else:
        # A date an hour ahead: an expiry in the past would be an expired event, not a bound.
        out.append((cls(NOW_MS + 3600000 if cls is Date else 1), True))
    if hi is not None:
        out += [(cls(hi), True), (cls(hi + 1), False)]
    return [(v, ok) for v, ok in out if -limit <= v < limit]


def _good_event(seq, etype="fz.event", data=None):
    return {"id": _uuid(), "seq": Int64(seq), "type": etype, "time": Date(NOW_MS),
            "data": data if data is not None else {"n": Int32(seq), "s": "fz"}}


class Gen:
    def __init__(self, table, rng, prefix):
        self.rules = {(r["scope"], r["name"]): r for r in table["rules"]}
        self.reserved = table["reserved"]
        self.rng = rng
        self.prefix = prefix
        self.n = 0
        self.out = []

    def rule(self, scope, name):
        r = self.rules.get((scope, name))
        if r is None:
            raise SystemExit("fuzz: the contract table has no rule %s %r" % (scope, name))
        return r

    def entity(self):
        self.n += 1
        return "%s-%d" % (self.prefix, self.n)

    def add(self, writer, rule, what, expect, reason=None, entity=NEW, event=None, lib=None,
            dropped=(), kept=None):
        self.out.append({
            "n": len(self.out), "writer": writer, "rule": "%s %s" % (rule["scope"], rule["name"]),
            "what": what, "entity": self.entity() if entity is NEW else entity,
            "event": event, "lib": lib, "expect": expect, "reason": reason,
            "dropped": list(dropped), "kept": kept})

    # -- raw writers: whole events, judged by `accepted` and `outcome` ---------------------

    def raw_field(self, name, value, valid, rule, missing=False):
        ev = _good_event(1)
        if missing:
            ev.pop(name, None)
        else:
            ev[name] = value
        if valid:
            self.add("raw", rule, "%s=%s" % (name, _short(value, missing)), PUBLISHED, event=ev)
        else:
            self.add("raw", rule, "%s=%s" % (name, _short(value, missing)), DEAD,
                     reason=rule["reason"], event=ev)

    def raw_event_rules(self):
        """Every EVENT row of the table but headers (raw_header_rules()), whatever rows it
        has: the values are chosen by the form's types and bounds."""
        for r in [r for (scope, _), r in self.rules.items() if scope == "event"]:
            name, f = r["name"], r["accepted"]
            if name == "headers":
                continue
            vals = []
            if "string" in f["types"]:
                vals += _strings(f, self.rng, "-%d" % self.n)
                if name == "id":  # ids must stay unique: one-byte and long ones made so
                    vals = [(v + _uuid() if isinstance(v, str) and ok and
                             len(v) < 100 and v != "x" else v, ok) for v, ok in vals]
            for t, cls in (("int", Int32), ("long", Int64)):
                if t in f["types"]:
                    vals += _bounded(f, cls, 2 ** 31 if t == "int" else 2 ** 63)
            if "date" in f["types"]:
                vals += _bounded(f, Date, 2 ** 63)
                if f["max"] is None:  # the far future (an expiry a century away and more)
                    vals += [(Date(253402300799999), True), (Date(2 ** 62), True)]
            if "object" in f["types"]:
                vals += [({}, True), ({"$fz": "dollar key", "e": "", "nul": "a\x00b",
                                       "deep": {"a": [1, {"b": GOOD_TEXT[2]}]}}, True),
                         ({"s": Raw(b"fz\xff")}, False)]
            if "binData" in f["types"]:
                vals += [(b"", True), (b"\x00\xff\xfefz", True)]
            vals += _types(f, self.rng, self.n, skip=("null",) if name == "id" else ())
            for v, ok in vals:
                self.raw_field(name, v, ok, r)
            self.raw_field(name, None, not f["required"], r, missing=True)

    def raw_headers(self, headers, rule, what, dropped, kept):
        ev = _good_event(1)
        ev["headers"] = headers
        self.add("raw", rule, what, PUBLISHED, reason=rule["reason"] if dropped else None,
                 event=ev, dropped=dropped, kept=kept)

    def raw_header_rules(self):
        r = self.rule("event", "headers")
        for v, _ in _types(r["accepted"], self.rng, self.n):
            self.raw_headers(v, r, "headers=%s" % _short(v), ["*"], {})
        for scope_name in ("name", "value"):
            r = self.rule("header", scope_name)
            for s, ok in _strings(r["accepted"], self.rng, "-h"):
                if scope_name == "name" and (isinstance(s, Raw) or "\x00" in s):
                    # A BSON key is a C string: no writer can store a NUL in it; and
                    # test-mongod refuses invalid UTF-8 in keys (22 InvalidBSON).
                    continue
                if scope_name == "name":
                    h = {s: "v"} if ok else {"ok": "v", s: "v"}
                    kept = {s: "v"} if ok else {"ok": "v"}
                else:
                    h = {"fzh": s}
                    kept = {"fzh": s} if ok else {}
                self.raw_headers(h, r, "header %s=%s" % (scope_name, _short(s)),
                                 [] if ok else ["x"], kept)
            if scope_name == "value":
                for v, _ in _types(r["accepted"], self.rng, self.n):
                    self.raw_headers({"fzh": v}, r, "header value=%s" % _short(v), ["fzh"], {})
        r = self.rule("header", "reserved name")
        for name in self.rng.sample(self.reserved, min(4, len(self.reserved))):
            name = "".join(c.upper() if self.rng.random() < 0.5 else c for c in name)
            self.raw_headers({"ok": "v", name: "forged"}, r, "header name %s" % name, [name],
                             {"ok": "v"})
        r = self.rule("header", "trace context")
        self.raw_headers({"traceparent": TRACEPARENT, "tracestate": "a=b"}, r, "trace ok", [],
                         {"traceparent": TRACEPARENT, "tracestate": "a=b"})
        self.raw_headers({"traceparent": "00-xyz"}, r, "traceparent bad", ["traceparent"], {})
        self.raw_headers({"tracestate": "A B C"}, r, "tracestate bad", ["tracestate"], {})
        r = self.rule("header", "count")
        mx = r["accepted"]["max"]
        full = {"h%02d" % i: "v" for i in range(mx)}
        self.raw_headers(dict(full), r, "headers=%d" % mx, [], dict(full))
        self.raw_headers(dict(full, zz="v"), r, "headers=%d" % (mx + 1), ["zz"], dict(full))
        # A repeated name (BSON allows it, a dict cannot hold it): the second is left out.
        self.raw_headers(Pairs([("dup", "first"), ("dup", "second")]),
                         self.rule("header", "duplicate"), "header name twice", ["dup"],
                         {"dup": "first"})
        r = self.rule("header", "bytes")
        mx = r["accepted"]["max"]
        vmax = self.rule("header", "value")["accepted"]["max"]
        h, used, i = {}, 0, 0
        while used < mx:  # names of 3 bytes, values filling up to the exact bound
            v = "v" * min(vmax, mx - used - 3)
            h["b%02d" % i] = v
            used += 3 + len(v)
            i += 1
        self.raw_headers(dict(h), r, "header bytes=%d" % mx, [], dict(h))
        self.raw_headers(dict(h, c="v"), r, "header bytes=%d" % (mx + 2), ["c"], dict(h))

    def raw_entity_rules(self):
        r = self.rule("entity", "_id")
        samples = _type_samples(self.rng, self.n)
        for name in r["accepted"]["types"]:
            if name in samples and name not in ("array",):  # MongoDB refuses array _ids
                v = samples[name]
                if name in ("bool", "null", "minKey", "maxKey"):
                    v = samples[name]  # one per collection: unique already
                elif name in ("int", "long", "double"):
                    v = type(v)(1000000 + len(self.out))
                self.add("raw", r, "_id %s" % name, PUBLISHED, entity=v, event=_good_event(1))
        for s, ok in _strings(r["accepted"], self.rng, "-%d" % len(self.out)):
            ent = s if isinstance(s, Raw) else "%s-%d-%s" % (self.prefix, len(self.out), s)
            if isinstance(s, Raw):
                ent = Raw(s.data + b"-" + str(len(self.out)).encode())
            self.add("raw", r, "_id=%s" % _short(s), PUBLISHED if ok else DEAD,
                     reason=None if ok else r["reason"], entity=ent, event=_good_event(1))

    def raw_message_rules(self, topic_prefix_len, max_message_bytes):
        r = self.rule("message", "topic")
        room = r["accepted"]["max"] - topic_prefix_len
        base = "%s-%d-" % (self.prefix, len(self.out))
        self.add("raw", r, "topic=max", PUBLISHED, entity=base + "t" * (room - len(base)),
                 event=_good_event(1))
        base = "%s-%d-" % (self.prefix, len(self.out))
        self.add("raw", r, "topic=max+1", DEAD, reason=r["reason"],
                 entity=base + "t" * (room + 1 - len(base)), event=_good_event(1))
        r = self.rule("message", "size")
        big = {"big": "b" * (max_message_bytes + 10)}
        self.add("raw", r, "message > max-message-bytes", DEAD, reason=r["reason"],
                 event=_good_event(1, data=big))

    # -- liboutbox: type, data, headers and the entity id, judged by `written`/`at_write` ---

    def lib(self, rule, what, ok, etype="fz.lib", data=None, headers=(), entity=NEW,
            expect=None, reason=None, **extra):
        """extra: binary (bytes: outbox_event_new_binary()), content_type, expires_at (ms)."""
        spec = {"type": etype, "data": data if data is not None else {"n": Int32(self.n)},
                "headers": list(headers)}
        spec.update(extra)
        self.add("lib", rule, what, expect or (PUBLISHED if ok else REFUSED),
                 reason=reason, entity=entity, lib=spec,
                 kept=dict(headers) if (expect or (PUBLISHED if ok else REFUSED)) == PUBLISHED
                 else None)

    def lib_rules(self, topic_prefix_len, max_message_bytes):
        r = self.rule("event", "type")
        for s, ok in _strings(r["written"], self.rng, ""):
            if isinstance(s, str) and "\x00" not in s:  # the API takes a C string
                self.lib(r, "type=%s" % _short(s), ok, etype=s)
        r = self.rule("event", "data")
        for d, ok in [({}, True), ({"$fz": 1}, False), ({"a": {"$b": 1}}, False),
                      ({"": 1}, False), ({"s": "a\x00b"}, False), ({"s": Raw(b"\xff")}, False),
                      ({"s": GOOD_TEXT[1], "l": [Int64(2 ** 62), 1.25, None, True]}, True)]:
            self.lib(r, "data=%s" % _short(d), ok, data=d)
        for name in ("name", "value"):
            r = self.rule("header", name)
            for s, ok in _strings(r["written"], self.rng, "-h"):
                if isinstance(s, Raw) or "\x00" in s:
                    continue  # not expressible through the C API (a NUL ends the string)
                h = [(s, "v")] if name == "name" else [("fzh", s)]
                self.lib(r, "header %s=%s" % (name, _short(s)), ok, headers=h)
        r = self.rule("header", "reserved name")
        for name in self.rng.sample(self.reserved, min(4, len(self.reserved))):
            name = "".join(c.upper() if self.rng.random() < 0.5 else c for c in name)
            self.lib(r, "header name %s" % name, False, headers=[(name, "v")])
        r = self.rule("header", "trace context")
        self.lib(r, "trace ok", True, headers=[("traceparent", TRACEPARENT)])
        self.lib(r, "traceparent bad", False, headers=[("traceparent", "00-xyz")])
        r = self.rule("header", "count")
        mx = r["written"]["max"]
        full = [("h%02d" % i, "v") for i in range(mx)]
        self.lib(r, "headers=%d" % mx, True, headers=full)
        self.lib(r, "headers=%d" % (mx + 1), False, headers=full + [("zz", "v")])
        r = self.rule("header", "bytes")
        mx = r["written"]["max"]
        vmax = self.rule("header", "value")["written"]["max"]
        h, used, i = [], 0, 0
        while used < mx:
            v = "v" * min(vmax, mx - used - 3)
            h.append(("b%02d" % i, v))
            used += 3 + len(v)
            i += 1
        self.lib(r, "header bytes=%d" % mx, True, headers=h)
        self.lib(r, "header bytes=%d" % (mx + 2), False, headers=h + [("c", "v")])
        r = self.rule("entity", "_id")
        samples = _type_samples(self.rng, self.n)
        for name, v in samples.items():
            if name in ("int", "long"):
                v = type(v)(2000000 + len(self.out))
            ok = name in r["written"]["types"]
            self.lib(r, "_id %s" % name, ok, entity=v)
        for s, ok in _strings(r["written"], self.rng, "-%d" % len(self.out)):
            ent = Raw(s.data + b"-%d" % len(self.out)) if isinstance(s, Raw) else \
                "%s-%d-%s" % (self.prefix, len(self.out), s)
            self.lib(r, "_id=%s" % _short(s), ok, entity=ent)
        if ("event", "contentType") in self.rules:  # binary data and its media type
            r = self.rule("event", "contentType")
            self.lib(r, "binary data, no contentType", True, binary=b"\x00\xfffz")
            for s, ok in _strings(r["written"], self.rng, ""):
                if isinstance(s, str) and "\x00" not in s:
                    self.lib(r, "contentType=%s" % _short(s), ok, binary=b"\x01fz",
                             content_type=s)
        if ("event", "expiresAt") in self.rules:
            r = self.rule("event", "expiresAt")
            f = r["written"]
            for v, ok in _bounded(f, Date, 2 ** 63):
                if ok and v < NOW_MS:  # a bound in the past: valid, but expired at its turn
                    self.lib(r, "expiresAt=%d (past)" % v, True, expires_at=v, expect=EXPIRED)
                else:
                    self.lib(r, "expiresAt=%d" % v, ok, expires_at=v)
            self.lib(r, "expiresAt in an hour", True, expires_at=NOW_MS + 3600000)
        r = self.rule("message", "topic")
        room = r["accepted"]["max"] - topic_prefix_len
        base = "%s-%d-" % (self.prefix, len(self.out))
        self.lib(r, "topic=max", True, entity=base + "t" * (room - len(base)))
        base = "%s-%d-" % (self.prefix, len(self.out))
        self.lib(r, "topic=max+1", False, entity=base + "t" * (room + 1 - len(base)),
                 expect=DEAD if r["at_write"] == "n/a" else REFUSED, reason=r["reason"])
        r = self.rule("message", "size")
        self.lib(r, "message > max-message-bytes", False,
                 data={"big": "b" * (max_message_bytes + 10)},
                 expect=DEAD if r["at_write"] == "n/a" else REFUSED, reason=r["reason"])

    # -- the example writers: type and data, judged by both forms ------------------------

    def example(self, rule, what, written_ok, accepted_ok, etype="fz.example", data=None,
                entity=NEW):
        """A case for examples/python/outbox_writer.py or examples/node/writer.js: they may
        refuse what breaks the written form (as liboutbox does) or store it; what they store
        must then have the accepted form's outcome."""
        self.add("example", rule, what, PUBLISHED if accepted_ok else DEAD,
                 reason=None if accepted_ok else rule["reason"], entity=entity)
        self.out[-1]["example"] = {"type": etype,
                                   "data": data if data is not None else {"n": Int32(self.n)}}
        self.out[-1]["may_refuse"] = not written_ok

    def example_rules(self):
        r = self.rule("event", "type")
        for s, ok in _strings(r["written"], self.rng, ""):
            if isinstance(s, str) and "\x00" not in s:
                self.example(r, "type=%s" % _short(s), ok, ok, etype=s)
        r = self.rule("event", "data")
        for d, w_ok, a_ok in [({}, True, True), ({"$fz": 1}, False, True),
                              ({"s": "a\x00b"}, False, True),
                              ({"s": GOOD_TEXT[1], "deep": {"l": [1, {"x": GOOD_TEXT[2]}]}},
                               True, True)]:
            self.example(r, "data=%s" % _short(d), w_ok, a_ok, data=d)
        r = self.rule("entity", "_id")
        for s in self.rng.sample(GOOD_TEXT + BAD_TEXT["mqtt"], 4) + ["a/b+#%$"]:
            self.example(r, "_id=%s" % _short(s), True, True,
                         entity="%s-%d-%s" % (self.prefix, len(self.out), s))

    def random_valid(self, count):
        """Plain valid events, from every writer, to fill a run up to --events."""
        for _ in range(count):
            data = {"k%d" % i: self.rng.choice([Int32(self.rng.randrange(-2 ** 31, 2 ** 31)),
                                                self.rng.choice(GOOD_TEXT), True, None, 0.5])
                    for i in range(self.rng.randrange(0, 5))}
            if self.rng.random() < 0.5:
                self.lib(self.rule("event", "data"), "random valid", True, data=data,
                         headers=[("traceparent", TRACEPARENT)] if self.rng.random() < .3 else [])
            else:
                self.add("raw", self.rule("event", "data"), "random valid", PUBLISHED,
                         event=_good_event(1, data=data))


def _short(v, missing=False):
    if missing:
        return "<missing>"
    s = repr(v)
    return s if len(s) <= 40 else s[:30] + "...(%d)" % len(s)


def cases(table, seed, prefix, topic_prefix_len, max_message_bytes, fill, now_ms):
    """Every case of one run, shuffled by `seed`."""
    global NOW_MS, _RNG
    NOW_MS = now_ms
    rng = _RNG = random.Random(seed)
    g = Gen(table, rng, prefix)
    g.raw_event_rules()
    g.raw_header_rules()
    g.raw_entity_rules()
    g.raw_message_rules(topic_prefix_len, max_message_bytes)
    g.lib_rules(topic_prefix_len, max_message_bytes)
    g.example_rules()
    g.random_valid(fill)
    rng.shuffle(g.out)
    for i, c in enumerate(g.out):
        c["n"] = i
    return g.out
