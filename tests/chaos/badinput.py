# Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
"""Bad-input scenarios: documents written behind the library's back, hostile entity ids,
invalid UTF-8, huge events, a broker refusing too large messages, broken configuration,
unreachable servers and wrong credentials. Each shows the clear error (dead letter with a
reason, log line, exit status) and that the writers' normal traffic around it still flowed
(the same checks as the fault scenarios)."""

import datetime
import json
import os
import re
import subprocess
import time
import uuid

import bson
from bson.int64 import Int64
from bson.raw_bson import RawBSONDocument

import chaoslib as cl
from chaoslib import DB, Env, check


def event(seq, etype="chaos.direct", data=None):
    return {"id": str(uuid.uuid4()), "seq": Int64(seq), "type": etype,
            "time": datetime.datetime.utcnow().replace(microsecond=0),
            "data": data if data is not None else {"n": seq}}


def insert_entity(env, eid, events, event_seq=None, coll="things"):
    """Inserts an entity as liboutbox would, but with whatever events we like."""
    seq = event_seq if event_seq is not None else len(events)
    env.db[coll].insert_one({"_id": eid, "version": Int64(1), "eventSeq": Int64(seq),
                             "events": events})


def delivered_ids(env):
    out = {}
    for topic, payload, _ in env.sub.snapshot():
        try:
            ce = json.loads(payload.decode("utf-8"))
        except Exception:
            continue
        out.setdefault(ce.get("id"), []).append((topic, ce))
    return out


def dead_letters(env, eid, coll="things"):
    d = env.db[coll].find_one({"_id": eid})
    return (d or {}).get("deadLetters", [])


def with_background(env, scenario, prefix="g", events=600):
    """Runs the relay and a writer's normal traffic around `scenario(env, relay)`, then checks
    that the normal traffic was delivered completely and in order."""
    relay = env.relay()
    check(relay.wait_log("change stream open"), "relay did not start")
    env.writer("things", prefix, 0, 40, events, 3, 3000)
    scenario(env, relay)
    env.finish_writers()
    return relay


def verify_background(env, allow=()):
    """The generic checks restricted to the writers' entities (bad documents are judged by
    the scenario itself)."""
    env.sub.wait_silence(1.5, 30)
    ok, line, problems = cl.verify(env.ledger, env.sub, env.db, env.colls, env.figures,
                                   allow_unknown=set(allow))
    print(line, flush=True)
    problems = [p for p in problems if "still pending" not in p and
                "topic does not match" not in p]
    lost = [i for i in env.ledger.committed if i not in delivered_ids(env)]
    check(not lost, "%d of the writers' events were not delivered" % len(lost))
    pend = [v for v in cl.pending_events(env.db, env.colls).values()
            if isinstance(v[1], str) and v[1].startswith("g")]
    check(not pend, "%d of the writers' events still pending" % len(pend))
    check(not problems, "; ".join(problems))


# ---------------------------------------------------------------------------------------------


def scenario_malformed_events(opts):
    """Events written behind the library's back: an event without id, without seq, without
    type, with data that is not a document, a non-document element; each is dead-lettered with
    a reason, and the valid events around them are delivered in order."""
    env = Env(opts, "malformed")
    direct = []
    try:
        def bad(env, relay):
            good1, good2 = event(1), event(6)
            evs = [good1,
                   {"seq": Int64(2), "type": "T", "data": {}},                  # no id
                   {"id": "no-seq-" + str(uuid.uuid4()), "type": "T", "data": {}},
                   {"id": "no-type-" + str(uuid.uuid4()), "seq": Int64(4), "data": {}},
                   {"id": "bad-data-" + str(uuid.uuid4()), "seq": Int64(5), "type": "T",
                    "data": 5},
                   "junk",
                   good2]
            insert_entity(env, "bad-1", evs, event_seq=6)
            direct.extend([good1["id"], good2["id"]])
            later = event(7)
            env.db.things.update_one({"_id": "bad-1"},
                                     {"$push": {"events": later},
                                      "$inc": {"version": Int64(1), "eventSeq": Int64(1)}})
            direct.append(later["id"])
        with_background(env, bad)
        cl.wait_until(lambda: not cl.pending_events(env.db, env.colls), 30, 0.3)
        verify_background(env, direct)
        got = delivered_ids(env)
        for i in direct:
            check(i in got, "a valid event next to malformed ones was not delivered")
        seqs = [got[i][0][1]["seq"] for i in direct]
        check(seqs == [1, 6, 7], "valid events of bad-1 delivered as %s" % seqs)
        dl = dead_letters(env, "bad-1")
        check(len(dl) == 5, "expected 5 dead letters, got %d: %s" % (len(dl), dl))
        check(all(d.get("reason") for d in dl), "a dead letter without a reason: %s" % dl)
        check(not env.db.things.find_one({"_id": "bad-1"})["events"], "events left in bad-1")
        env.figures.notes.append("dead letter reasons: %s" % sorted({d["reason"] for d in dl}))
        print("  " + env.figures.notes[-1])
    finally:
        env.close()


def scenario_events_not_array(opts):
    """A document whose events field is not an array (with eventSeq bumped, so it passes the
    relay's filter): a clear error in the log, the document is left as it is, and everything
    else still flows."""
    env = Env(opts, "notarray")
    try:
        def bad(env, relay):
            env.db.things.insert_one({"_id": "bad-str", "version": Int64(1),
                                      "eventSeq": Int64(1), "events": "junk"})
            env.db.things.insert_one({"_id": "bad-doc", "version": Int64(1),
                                      "eventSeq": Int64(1), "events": {"0": event(1)}})
        relay = with_background(env, bad)
        verify_background(env)
        text = relay.log_text()
        check(relay.alive(), "relay died")
        check("bad-str" in text and "bad-doc" in text,
              "no log line names the documents whose events are not an array")
        for eid in ("bad-str", "bad-doc"):
            d = env.db.things.find_one({"_id": eid})
            check(d is not None and d["version"] == 1, "relay changed %s: %s" % (eid, d))
    finally:
        env.close()


def scenario_huge_event(opts):
    """A 15 MiB event (inside MongoDB's 16 MiB document limit, inside the broker's limit):
    it is published and cleared, and the writers' traffic is not stalled by it."""
    env = Env(opts, "huge")
    ids = []
    try:
        def bad(env, relay):
            e = event(1, data={"blob": "x" * (15 * 1024 * 1024)})
            insert_entity(env, "huge-1", [e])
            ids.append(e["id"])
        with_background(env, bad)
        cl.wait_until(lambda: not cl.pending_events(env.db, env.colls), 60, 0.5)
        verify_background(env, ids)
        got = delivered_ids(env)
        check(ids[0] in got, "the 15 MiB event was not delivered (dead letters: %s)" %
              [d.get("reason") for d in dead_letters(env, "huge-1")])
        check(len(got[ids[0]][0][1]["data"]["blob"]) == 15 * 1024 * 1024, "blob truncated")
    finally:
        env.close()


def scenario_broker_too_large(opts):
    """The broker refuses messages above 64 KiB (mosquitto message_size_limit) while the
    relay's own limit is the default: the refused event is dead-lettered with a reason (not
    retried forever, not cleared as if delivered), and everything else flows."""
    env = Env(opts, "toolarge", broker_conf="message_size_limit 65536\n")
    ids = []
    try:
        def bad(env, relay):
            small1, big, small2 = event(1), event(2, data={"blob": "y" * 200000}), event(3)
            insert_entity(env, "big-1", [small1, big, small2])
            ids.extend([small1["id"], big["id"], small2["id"]])
        with_background(env, bad)
        cl.wait_until(lambda: not cl.pending_events(env.db, env.colls), 30, 0.3)
        verify_background(env, ids)
        got = delivered_ids(env)
        dl = dead_letters(env, "big-1")
        check(ids[0] in got and ids[2] in got, "small events around the big one not delivered")
        check(len(dl) == 1 and dl[0].get("reason"),
              "the refused event is not in deadLetters with a reason (deadLetters %s, pending "
              "%d)" % ([d.get("reason") for d in dl],
                       len(env.db.things.find_one({"_id": "big-1"}).get("events", []))))
    finally:
        env.close()


def _raw_doc_with_bad_utf8(eid_bytes, data_bytes, seq=1):
    """A BSON document whose _id (when eid_bytes) and event data string contain bytes that are
    not UTF-8; pymongo cannot build such strings, so the BSON is written by hand."""
    def cstring(s):
        return s.encode() + b"\x00"

    def string(key, raw):
        return b"\x02" + cstring(key) + (len(raw) + 1).to_bytes(4, "little") + raw + b"\x00"

    def doc(body):
        return (len(body) + 5).to_bytes(4, "little") + body + b"\x00"

    ev_id = str(uuid.uuid4())
    data = doc(string("text", data_bytes))
    evt = doc(string("id", ev_id.encode()) + b"\x12" + cstring("seq") +
              seq.to_bytes(8, "little") + string("type", b"chaos.utf8") +
              b"\x03" + cstring("data") + data)
    events = doc(b"\x03" + cstring("0") + evt)
    body = (string("_id", eid_bytes) + b"\x12" + cstring("version") + (1).to_bytes(8, "little") +
            b"\x12" + cstring("eventSeq") + seq.to_bytes(8, "little") +
            b"\x04" + cstring("events") + events)
    return RawBSONDocument(doc(body)), ev_id


def scenario_hostile_ids(opts):
    """Entity ids that try to break topics (/, +, #, NUL, %, control characters, a nested
    document, numbers): every topic stays one level under outbox/things/, every event is
    delivered or dead-lettered with a reason, nothing stays pending, the writers' traffic
    flows."""
    hostile_ids(opts, "hostile", ["/", "a/b", "+", "#", "x\x00y", "%2F", "\x1b[31m",
                                  {"a": {"b": "/+#"}}, 42, Int64(2 ** 40)])


def scenario_long_id(opts):
    """A 64 KiB string id (its topic cannot fit MQTT's 65535-byte limit): the event is
    dead-lettered with a reason, the writers' traffic flows."""
    hostile_ids(opts, "longid", ["x" * 65536])


def scenario_invalid_utf8(opts):
    """An entity id and event data with invalid UTF-8 (written as raw BSON): the id is
    percent-encoded in the topic or the event dead-lettered, the writers' traffic flows."""
    hostile_ids(opts, "utf8", [], utf8=True)


def hostile_ids(opts, tag, hostile, utf8=False):
    env = Env(opts, tag)
    ids = {}
    try:
        def bad(env, relay):
            for h in hostile:
                e = event(1)
                insert_entity(env, h, [e])
                ids[e["id"]] = h
            if utf8:
                raw, ev_id = _raw_doc_with_bad_utf8(b"bad\xff\xfeid", b"ok")
                env.db.things.insert_one(raw)
                ids[ev_id] = "bad-utf8-id"
                raw, ev_id = _raw_doc_with_bad_utf8(b"bad-utf8-data", b"\xc3\x28\xff")
                env.db.things.insert_one(raw)
                ids[ev_id] = "bad-utf8-data"
        with_background(env, bad)
        cl.wait_until(lambda: not cl.pending_events(env.db, env.colls), 30, 0.3)
        verify_background(env, ids)
        got = delivered_ids(env)
        problems = []
        for topic, _, _ in env.sub.snapshot():
            rest = topic[len("outbox/things/"):]
            if not topic.startswith("outbox/things/") or "/" in rest or "+" in topic or \
                    "#" in topic or "\x00" in topic:
                problems.append("topic escaped its template: %r" % topic[:80])
        dead = {}
        raw = env.db.things.with_options(
            codec_options=bson.codec_options.CodecOptions(
                unicode_decode_error_handler="replace"))
        for d in raw.find({"deadLetters.0": {"$exists": True}}):
            for x in d["deadLetters"]:
                if isinstance(x.get("event"), dict):
                    dead[x["event"].get("id")] = x.get("reason")
        for ev_id, h in ids.items():
            if ev_id not in got and not dead.get(ev_id):
                problems.append("event of entity %r neither delivered nor dead-lettered" %
                                (h if not isinstance(h, str) else h[:20]))
        pend = cl.pending_events(env.db, env.colls)
        check(not pend, "%d events still pending: %s" %
              (len(pend), [cl.short(v) for v in list(pend.values())[:3]]))
        check(not problems, "; ".join(problems[:5]))
        n_dead = sum(1 for i in ids if i in dead)
        print("  hostile ids: %d delivered, %d dead-lettered (%s)" %
              (sum(1 for i in ids if i in got), n_dead, sorted(set(dead.values()))))
    finally:
        env.close()


# ---------------------------------------------------------------------------------------------
# Configuration and connections


def run_relay_cli(opts, args, env_vars=None, timeout=15):
    env = dict(os.environ)
    for k in list(env):
        if k.startswith("OUTBOX_"):
            del env[k]
    env.update(env_vars or {})
    p = subprocess.run([opts.relay] + args, capture_output=True, timeout=timeout, env=env)
    return p.returncode, (p.stdout + p.stderr).decode("utf-8", "replace")


def scenario_bad_config(opts):
    """Broken flags and config files: the relay exits at once with 64 or 78 and a message that
    names what is wrong; a password never shows in --check-config."""
    work = cl.new_workdir("config")
    base = ["--mongodb-uri", "mongodb://127.0.0.1:1/?replicaSet=rs0", "--database", "d",
            "--collection", "c", "--mqtt-uri", "tcp://127.0.0.1:1", "--metrics-listen", "off"]

    def conf(name, text):
        path = os.path.join(work, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    cases = [
        ("unknown flag", base + ["--no-such-flag"], {}, (64,), "no-such-flag"),
        ("flag without value", base + ["--qos"], {}, (64,), "qos"),
        ("bad qos", base + ["--qos", "7"], {}, (64, 78), "qos"),
        ("bad number", base + ["--inflight-window", "many"], {}, (64, 78), "inflight"),
        ("missing uri", base[2:], {}, (64, 78), "mongodb-uri"),
        ("bad mqtt scheme", base + ["--mqtt-uri", "http://127.0.0.1:1"], {}, (64, 78), "mqtt"),
        ("wildcard topic", base + ["--topic", "outbox/+/{id}"], {}, (64, 78), "topic"),
        ("unknown template", base + ["--topic", "outbox/{nope}"], {}, (64, 78), "nope"),
        ("bad env", base, {"OUTBOX_QOS": "x"}, (64, 78), "OUTBOX_QOS"),
        ("config not json", base + ["--config", conf("a.json", "{qos: 1,")], {}, (78,), "a.json"),
        ("config unknown key", base + ["--config", conf("b.json", '{"nosuchkey": 1}')], {},
         (78,), "nosuchkey"),
        ("config wrong type", base + ["--config", conf("c.json", '{"qos": "high"}')], {},
         (78,), "qos"),
        ("config not an object", base + ["--config", conf("d.json", '[1, 2]')], {}, (78,),
         "d.json"),
        ("config missing", base + ["--config", os.path.join(work, "missing.json")], {},
         (66, 78), "missing.json"),
        ("binary mode with MQTT 3.1.1", base + ["--payload-mode", "binary", "--mqtt-version",
                                                 "4"], {}, (64, 78), "binary"),
        # Issue 14: credentials in the MQTT URI are refused naming the right options; a key
        # given twice and a NUL escape in a config string are refused; SSL:// is accepted.
        ("credentials in the MQTT URI", base + ["--mqtt-uri", "tcp://u:s3cr3t@127.0.0.1:1"], {},
         (64,), "--mqtt-password-file"),
        ("config key twice", base + ["--config", conf("e.json", '{"qos": 1, "qos": 2}')], {},
         (78,), "more than once"),
        ("config NUL escape", base + ["--config", conf("f.json", '{"name": "a\\u0000b"}')],
         {}, (78,), "NUL"),
    ]
    problems = []
    try:
        for what, args, env_vars, codes, needle in cases:
            start = time.time()
            status, out = run_relay_cli(opts, args, env_vars)
            took = time.time() - start
            if status not in codes or needle.lower() not in out.lower() or took > 5:
                problems.append("%s: status %d (want %s) in %.1fs, output %r" %
                                (what, status, codes, took, out.strip()[-200:]))
        status, out = run_relay_cli(
            opts, ["--check-config", "--mongodb-uri", "mongodb://u:s3cr3tpw@127.0.0.1:1/",
                   "--database", "d", "--collection", "c", "--mqtt-uri", "tcp://127.0.0.1:1"],
            {"OUTBOX_MQTT_PASSWORD": "mqttpw-s3cr3t"})
        if status != 0 or "s3cr3t" in out:
            problems.append("--check-config: status %d, secret shown: %s" %
                            (status, "s3cr3t" in out))
        for args in (["--mqtt-uri", "tcp://u:s3cr3t@127.0.0.1:1"],
                     ["--mongodb-uri", "mongodb://u:pa:ss-s3cr3t@127.0.0.1:1/"]):
            status, out = run_relay_cli(opts, ["--check-config"] + base + args)
            if "s3cr3t" in out:
                problems.append("a refused URI's password shown: %r" % out.strip()[-200:])
        status, out = run_relay_cli(opts, ["--check-config"] + base +
                                    ["--mqtt-uri", "SSL://127.0.0.1:1"])
        if status != 0 or "mqtt-uri                = ssl://127.0.0.1:1" not in out:
            problems.append("SSL:// not taken as ssl://: status %d" % status)
        print("  %d config cases checked" % (len(cases) + 4))
        check(not problems, "\n    ".join([""] + problems))
    finally:
        import shutil
        shutil.rmtree(work, ignore_errors=True)


def scenario_unreachable_servers(opts):
    """The relay starts while neither MongoDB nor the broker is reachable: it says so in its
    log, keeps trying, and delivers everything once both come up on those addresses."""
    work = cl.new_workdir("unreach")
    mongo_port, mqtt_port = cl.free_port(), cl.free_port()
    relay = mongod = broker = sub = None
    try:
        relay = cl.Relay(opts.relay, work, "mongodb://127.0.0.1:%d/?directConnection=true&"
                         "serverSelectionTimeoutMS=1000" % mongo_port,
                         "tcp://127.0.0.1:%d" % mqtt_port, DB, ["things"], "chaos", (),
                         opts.relay_log_level)
        time.sleep(4)
        text = relay.log_text()
        check(relay.alive(), "relay exited while the servers were down (status %s): %s" %
              (relay.proc.returncode, text[-300:]))
        check("WARN" in text or "ERROR" in text, "nothing in the log about unreachable servers")
        mongod = cl.Mongod(opts.mongod, work, port=mongo_port)
        broker = cl.Broker(work, port=mqtt_port)
        sub = cl.Subscriber(broker)
        ids = []
        for i in range(20):
            e = event(1)
            mongod.client[DB].things.insert_one({"_id": "u%d" % i, "version": Int64(1),
                                                 "eventSeq": Int64(1), "events": [e]})
            ids.append(e["id"])
        ok = cl.wait_until(lambda: len({json.loads(p)["id"] for _, p, _ in sub.snapshot()}
                                       & set(ids)) == len(ids), 60, 0.3)
        check(ok, "after the servers came up only %d of %d events arrived" %
              (len({json.loads(p)["id"] for _, p, _ in sub.snapshot()} & set(ids)), len(ids)))
        check(cl.wait_until(lambda: not cl.pending_events(mongod.client[DB], ["things"]), 30),
              "events not cleared after the servers came up")
    finally:
        if relay:
            relay.stop()
        if sub:
            sub.close()
        if broker:
            broker.close()
        if mongod:
            mongod.close()
        import shutil
        shutil.rmtree(work, ignore_errors=True)


def scenario_wrong_credentials(opts):
    """The broker refuses the relay's password: the log says so clearly, nothing is
    published or cleared (no event lost or dead-lettered); restarted with the right password,
    the relay delivers everything. MongoDB credentials the server refuses: a clear log line."""
    env = Env(opts, "creds", start_broker=False)
    try:
        pwfile = os.path.join(env.workdir, "passwd")
        with open(pwfile, "w") as f:
            f.write("relay:right-password\nchaos-sub:sub-password\n")
        subprocess.run(["mosquitto_passwd", "-U", pwfile], check=True)
        os.chmod(pwfile, 0o644)
        env.broker = cl.Broker(env.workdir, "password_file %s\n" % pwfile)
        # With allow_anonymous true the password file still applies to clients that give a
        # user name, so a wrong password is refused.
        env.sub = cl.Subscriber(env.broker)
        for i in range(10):
            insert_entity(env, "c%d" % i, [event(1)])
        bad = cl.Relay(opts.relay, env.workdir, env.mongod.uri, env.broker.uri, DB, env.colls,
                       "chaos", ["--mqtt-username", "relay"], opts.relay_log_level)
        env.relays.append(bad)
        time.sleep(3)
        text = bad.log_text()
        pend = cl.pending_events(env.db, env.colls)
        check(len(pend) == 10, "with a wrong MQTT password %d of 10 events left their "
              "documents" % (10 - len(pend)))
        check(env.sub.count() == 0, "something was published without authentication")
        bad.stop()
        good = cl.Relay(opts.relay, env.workdir, env.mongod.uri, env.broker.uri, DB, env.colls,
                        "chaos", ["--mqtt-username", "relay"], opts.relay_log_level,
                        env=dict(os.environ, OUTBOX_MQTT_PASSWORD="right-password"))
        env.relays.append(good)
        check(cl.wait_until(lambda: not cl.pending_events(env.db, env.colls), 30),
              "with the right password the events were not delivered")
        check(env.sub.wait_silence(1.0, 10) and env.sub.count() >= 10, "events not received")
        # MongoDB: credentials in the URI that the server refuses.
        mbad = cl.Relay(opts.relay, env.workdir,
                        re.sub(r"^(mongodb(?:\+srv)?://)(?:[^@/]*@)?", r"\1relay:wrong@",
                               env.mongod.uri),
                        env.broker.uri, DB, env.colls, "chaos-m", (), opts.relay_log_level)
        env.relays.append(mbad)
        time.sleep(3)
        mongo_text = mbad.log_text()
        mbad.stop()
        text = bad.log_text().lower()
        problems = []
        if not any(w in text for w in ("not authorized", "bad user name or password")):
            problems.append("the log does not say the broker refused the credentials: %r" %
                            [ln for ln in text.splitlines() if "mqtt" in ln][-1:])
        if "auth" not in mongo_text.lower():
            problems.append("the log does not mention the MongoDB authentication failure: %r"
                            % mongo_text.splitlines()[-2:])
        check(not problems, "; ".join(problems))
    finally:
        env.close()


SCENARIOS = [
    scenario_malformed_events, scenario_events_not_array, scenario_huge_event,
    scenario_broker_too_large, scenario_hostile_ids, scenario_long_id, scenario_invalid_utf8,
    scenario_bad_config,
    scenario_unreachable_servers, scenario_wrong_credentials,
]

# Passing against the current relay (see FINDINGS.md). huge_event passes but takes ~30 s,
# so it runs in --all and --long only.
CI_SCENARIOS = ["malformed_events", "events_not_array", "broker_too_large", "hostile_ids",
                "long_id", "invalid_utf8", "bad_config", "unreachable_servers",
                "wrong_credentials"]
