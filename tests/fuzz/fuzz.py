#!/usr/bin/python3
# Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
"""The differential end-to-end fuzzer of the event contract (README.md in this folder).

Generates events from liboutbox's contract table (fuzz-contract), writes them through
liboutbox (fuzz-writer), pymongo and the Node `mongodb` driver, runs outbox-relay in each
combination of MQTT 5 / 3.1.1, structured / binary payloads and archive on / off, replays the
archive with outbox-admin, and judges every event (check.py): refused at write with a clear
error, or published (equal to the stored event) and archived, or dead-lettered with the
table's reason. Never an event pending at the end, never a broker disconnect, /healthz 200.

usage: fuzz.py --relay PATH --admin PATH --writer PATH --contract PATH [--node-dir DIR]
               [--c-consumer PATH] [--keep] [--share K] [--seed N] [--seeds K] [--fill N] [--long] [--runs LIST]
OUTBOX_TEST_MONGODB_URI and OUTBOX_TEST_MQTT_URI must be set (tests/fixtures/with-servers);
the broker's log is read from OUTBOX_TEST_WORKDIR/mosquitto.log when with-servers started it.
Every run prints its seed; `--seed N` repeats it exactly (the same cases, in the same order)."""
import argparse
import collections
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "examples"))
try:
    import pymongo
    import runner
except ImportError as e:
    print("fuzz: SKIP: needs Debian's python3-pymongo and python3-paho-mqtt (run it with "
          "/usr/bin/python3): %s" % e)
    sys.exit(77)
from bson.codec_options import CodecOptions
from bson.raw_bson import RawBSONDocument

import bsonenc

import check
import consumers
import generate
from generate import _good_event

MONGO = os.environ.get("OUTBOX_TEST_MONGODB_URI")
MQTT = os.environ.get("OUTBOX_TEST_MQTT_URI")
MAX_MESSAGE_BYTES = 300000  # above the largest topic (65535) + its subject: no topic case trips it
# (name, MQTT version, payload mode, archive): every combination the relay offers (binary
# mode needs MQTT 5's user properties).
RUNS = [("v5-structured", 5, "structured", False), ("v5-structured-archive", 5, "structured", True),
        ("v5-binary", 5, "binary", False), ("v5-binary-archive", 5, "binary", True),
        ("v311-structured", 4, "structured", False),
        ("v311-structured-archive", 4, "structured", True)]


# Defects the fuzzer found that are still open, each listed in tests/fuzz/README.md
# ("Known open"); their problems are printed as KNOWN OPEN and do not fail the run. Every
# entry: (finding, regular expression over "RUN: problem").
KNOWN_OPEN = [
    ("F1: liboutbox refuses a binary _id that is not a UUID, which the table's written form "
     "allows", r"_id binData\): refused at write \(binary id must be a UUID"),
    ("F2: binary mode publishes an entity whose _id is invalid UTF-8 (percent-encoded), "
     "structured mode dead-letters it as the table says",
     r"^v5-binary[^:]*: (case \d+ \(raw, entity _id: _id=Raw\(|node consumer: unreadable "
     r"message on \S+/ev/fz%|node consumer never applied published event \S+ "
     r"\(entity _id: _id=Raw\()"),
    ("F3: the archive's dead-letter reason for a shared event id is not a reason of the "
     "contract table", r"shared event id: dead-lettered with \"the archive holds another "
     r"entity's event with this event id"),
]


def known_open(problem):
    for finding, pattern in KNOWN_OPEN:
        if re.search(pattern, problem):
            return finding
    return None


def pending(coll):
    return coll.count_documents({"events.0": {"$exists": True}})


def mosquitto_offset():
    path = os.path.join(os.environ.get("OUTBOX_TEST_WORKDIR", ""), "mosquitto.log")
    return path, (os.path.getsize(path) if os.path.exists(path) else None)


def broker_disconnects(path, offset, client_id):
    """Lines of the broker's log, since @offset, where it dropped @client_id."""
    if offset is None:
        return []
    with open(path, errors="replace") as f:
        f.seek(offset)
        lines = f.read().splitlines()
    bad = ("malformed", "protocol error", "Socket error", "exceeded", "disconnecting")
    return [l for l in lines if client_id in l and any(b in l for b in bad)]


def assign_writers(cases, rng, node_path):
    for c in cases:
        if c["writer"] == "example":
            c["via"] = "node-example" if node_path and runner.node_expressible(
                c["example"]["data"]) and rng.random() < 0.5 else "python-example"
            continue
        if c["writer"] != "raw":
            c["via"] = "liboutbox"
            continue
        c["follow"] = _good_event(2)
        doc = runner.raw_document(c, c["follow"])
        c["via"] = "node" if node_path and runner.node_expressible(doc) and \
            rng.random() < 0.5 else "pymongo"


def run_one(opts, table, seed, spec, node_path, client, workdir, totals):
    name, version, mode, archive = spec
    tag = "s%d-%s" % (seed, name)
    db_name = "fuzz_%d_%s" % (seed, name.replace("-", "_"))
    root = "fz%d%s" % (seed, name.replace("-", ""))
    # Stored events may hold invalid UTF-8: decode it as U+FFFD rather than fail.
    db = client.get_database(db_name, codec_options=CodecOptions(
        unicode_decode_error_handler="replace"))
    coll = db["ev"]
    now_ms = int(time.time() * 1000) // 1000 * 1000
    cases = generate.cases(table, seed, "e", len(root + "/ev/"), MAX_MESSAGE_BYTES,
                           opts.fill, now_ms)
    if opts.share < len(RUNS):  # each case in `share` of the runs, chosen by the seed
        which = [r[0] for r in RUNS].index(name)
        cases = [c for c in cases
                 if which in random.Random(seed * 100003 + c["n"]).sample(range(len(RUNS)),
                                                                          opts.share)]
    rng = random.Random(seed)
    assign_writers(cases, rng, node_path)
    client_id = "fuzz-%s" % tag
    args = ["--mongodb-uri", MONGO, "--database", db_name, "--collection", "ev",
            "--mqtt-uri", MQTT, "--name", "fuzz-" + tag, "--client-id", client_id,
            "--mqtt-version", str(version), "--payload-mode", mode,
            "--topic", root + "/{collection}/{id}", "--max-message-bytes", str(MAX_MESSAGE_BYTES),
            "--checkpoint-interval-ms", "200", "--pending-scan-interval-ms", "500"]
    if archive:
        args += ["--archive-collection", "archive"]
    # Replays go to "rp" + root[2:]: as long as the live topics, so the topic bound holds
    # for both.
    sub = runner.Subscriber(MQTT, [root + "/#", "rp" + root[2:] + "/#"], "fuzz-sub-" + tag)
    log_path, offset = mosquitto_offset()
    relay = runner.Relay(opts.relay, workdir, tag, args)
    problems = []
    try:
        if not relay.wait_started():
            raise SystemExit("fuzz: the relay did not start (%s)" % relay.log_path)
        cons = consumers.Consumers(opts, node_path, MQTT, MONGO, root, tag, workdir)
        if not cons.wait_subscribed():
            raise SystemExit("fuzz: an example consumer did not subscribe (%s)" % cons.logs)
        # The writers at once, as services in several languages would write.
        write_all(opts, cases, node_path, db_name, coll, workdir, tag)
        write_shared_id(coll, seed, 0)
        drained = runner.wait_until(lambda: pending(coll) == 0 and sub.silent_for(0.5), 60, 0.1)
        # The second entity with the shared id last, alone: with the archive on, its refusal
        # is the relay's last archive write, so /healthz must recover without more traffic.
        shared = write_shared_id(coll, seed, 1)
        drained = drained and runner.wait_until(
            lambda: pending(coll) == 0 and sub.silent_for(0.5), 60, 0.1)
        # Cleared means the broker acknowledged; the subscriber may lag behind on a loaded
        # machine: wait for every event the table says is published (or 3 s of silence).
        want = expected_published(cases)
        runner.wait_until(lambda: want <= seen_ids(sub, root, mode == "binary") and
                          sub.silent_for(0.2) or sub.silent_for(3.0), 30, 0.1)
        if not drained:
            problems.append("%d documents still have pending events after 60 s" % pending(coll))
        problems += check_health(relay, coll, seed)
        reconnects = relay.metric("outbox_relay_mqtt_reconnects_total")
        if reconnects:
            problems.append("the relay reconnected to the broker %d times" % reconnects)
        messages = sub.snapshot()
        judge = check.Judge({"topic_root": root, "binary": mode == "binary", "v5": version == 5,
                             "now_ms": time.time() * 1000, "gen_ms": now_ms},
                            cases, [m for m in messages if m[0].startswith(root + "/")],
                            db, coll, db["archive"] if archive else None)
        outcomes = collections.Counter()
        for c in cases:
            got = judge.judge(c)
            outcomes["%s %s" % (c["via"], got or "FAILED")] += 1
        problems += judge.problems
        problems += check_left_out(relay, cases)
        problems += check_shared_id(coll, db["archive"] if archive else None, judge, shared,
                                    table)
        labels = judge.labels()
        delivered = {i: labels.get(i, "?") for i in judge.by_id if i}
        cons.wait_seen(delivered)
        problems += cons.check(delivered)
        if archive:
            problems += check_replay(opts, args, root, sub, judge, cases, workdir, tag)
    finally:
        status = runner.stop(relay.proc)
        sub.close()
    if status != 0:
        problems.append("the relay exited with status %s (%s)" % (status, relay.log_path))
    problems += ["broker dropped the relay: " + l
                 for l in broker_disconnects(log_path, offset, client_id)]
    problems = ["%s: %s" % (name, p) for p in problems]
    totals.update(outcomes)
    print("fuzz: seed=%d run=%s events=%d %s problems=%d" % (
        seed, name, len(cases), " ".join("%s=%d" % kv for kv in sorted(outcomes.items())),
        len(problems)), flush=True)
    return problems


def expected_published(cases):
    """The ids of the events the table says must be published."""
    out = set()
    for c in cases:
        res = c.get("result") or {}
        if not res.get("ok"):
            continue
        if c["expect"] == "published":
            out.add(res["id"] if "id" in res else c["event"]["id"])
        if c.get("follow") and not (c["expect"] == "dead-lettered" and
                                    c["rule"] in check.ENTITY_RULES):
            out.add(c["follow"]["id"])
    return out


def seen_ids(sub, root, binary):
    return {check.message_event_id(p, pr, binary) for t, p, pr, _ in sub.snapshot()
            if t.startswith(root + "/")}


def check_left_out(relay, cases):
    """Headers left out are counted by the rule that left them out: at least once per case
    that breaks the rule, and never under a rule no case breaks."""
    want = collections.Counter(c["rule"].split(" ", 1)[1] for c in cases
                               if c["dropped"] and c.get("result", {}).get("ok"))
    total = relay.metric("outbox_relay_headers_dropped_total")
    got = relay.metric_by("outbox_relay_headers_dropped_by_rule_total", "rule")
    problems = []
    if want and not total:
        problems.append("headers were left out but outbox_relay_headers_dropped_total is 0")
    for rule, n in sorted(want.items()):
        if got.get(rule, 0) < n:
            problems.append("%d cases break rule %r, outbox_relay_headers_dropped_by_rule_total"
                            "{rule=%r} is %s" % (n, rule, rule, got.get(rule)))
    for rule, v in sorted(got.items()):
        if v and rule not in want:
            problems.append("outbox_relay_headers_dropped_by_rule_total{rule=%r} is %d, but "
                            "no case breaks that rule" % (rule, v))
    return problems


def check_health(relay, coll, seed):
    """/healthz must answer 200 once nothing is pending. An archive that refused an event for
    good (it was dead-lettered) is told apart from one still failing: a valid event written
    afterwards must bring it back at its batch (then the answer was stuck, finding F4)."""
    healthy = lambda: relay.http("/healthz")[0] == 200  # noqa: E731
    if runner.wait_until(healthy, 2):
        return []
    status, body = relay.http("/healthz")
    ev = _good_event(1)
    coll.insert_one(RawBSONDocument(bsonenc.document(
        {"_id": "nudge-%d" % seed, "version": bsonenc.Int64(1), "eventSeq": bsonenc.Int64(1),
         "events": [ev]})))
    if runner.wait_until(healthy, 10):
        return ["/healthz answered %s (%s) with nothing pending, until another event was "
                "archived" % (status, body.strip()[:120])]
    return ["/healthz answers %s: %s" % (status, body.strip()[:200])]


def write_shared_id(coll, seed, which):
    """Entity @which of two whose events share one event id (writers in other languages make
    their own ids): both are published; with the archive on, the first is archived and the
    second dead-lettered with a reason, never cleared into neither (issue 33)."""
    eid = "shared-%d" % seed
    ents = ["shared-a-%d" % seed, "shared-b-%d" % seed]
    for ent in ents[which:which + 1]:
        ev = _good_event(1)
        ev["id"] = eid
        coll.insert_one(RawBSONDocument(bsonenc.document(
            {"_id": ent, "version": bsonenc.Int64(1), "eventSeq": bsonenc.Int64(1),
             "events": [ev]})))
    return eid, ents


def check_shared_id(coll, archive, judge, shared, table):
    eid, ents = shared
    reasons = {r["reason"] for r in table["rules"]}
    copies = judge.by_id.get(eid, [])
    subjects = {json.loads(p)["subject"] if not judge.run["binary"] else dict(pr).get("subject")
                for _, p, pr, _ in copies}
    dls = [d.get("reason") for e in ents
           for d in (coll.find_one({"_id": e}, {"deadLetters.reason": 1}) or {})
           .get("deadLetters", [])]
    problems = []
    if archive is None:
        if subjects != set(ents):
            problems.append("shared event id: published for %s, expected both %s" % (
                sorted(subjects), ents))
        if dls:
            problems.append("shared event id: dead-lettered without an archive: %s" % dls)
        return problems
    entries = list(archive.find({"_id": eid}, {"entityId": 1}))
    if len(entries) != 1:
        problems.append("shared event id: %d archive entries" % len(entries))
    if len(dls) != 1:
        problems.append("shared event id: %d dead letters (%s), expected the entity the "
                        "archive did not take" % (len(dls), dls))
    for r in dls:
        if r not in reasons:
            problems.append("shared event id: dead-lettered with %r, a reason the contract "
                            "table does not name" % r)
    return problems


def write_all(opts, cases, node_path, db_name, coll, workdir, tag):
    def lib():
        runner.write_lib(opts.writer, MONGO, db_name, "ev",
                         [c for c in cases if c["via"] == "liboutbox"],
                         os.path.join(workdir, "writer-%s.log" % tag))

    def node():
        if node_path:
            runner.write_node(node_path, MONGO, db_name, "ev",
                              [c for c in cases if c["via"] == "node"],
                              os.path.join(workdir, "node-%s.log" % tag))
    errors = []

    def guarded(fn):
        try:
            fn()
        except BaseException as e:  # SystemExit from a writer included: reported below
            errors.append(e)
    threads = [threading.Thread(target=guarded, args=(fn,)) for fn in (lib, node)]
    for t in threads:
        t.start()
    guarded(lambda: runner.write_pymongo(coll, [c for c in cases if c["via"] == "pymongo"]))
    guarded(lambda: runner.write_examples(coll, node_path, MONGO, db_name, "ev",
                                          [c for c in cases if c["writer"] == "example"],
                                          os.path.join(workdir, "examples-%s.log" % tag)))
    for t in threads:
        t.join()
    if errors:
        raise SystemExit("fuzz: a writer failed: %s" % errors[0])


def check_replay(opts, relay_args, root, sub, judge, cases, workdir, tag):
    """outbox-admin replay of the whole archive: every archived event again, equal to its
    live message but for the replay marker."""
    before = len(sub.snapshot())
    args = [a for a in relay_args if a not in ("--pending-scan-interval-ms", "500",
                                                "--checkpoint-interval-ms", "200")]
    i = args.index("--client-id")
    args[i + 1] += "-replay"
    r = subprocess.run([opts.admin] + args + ["replay", "--topic", "rp" + root[2:] +
                                              "/{collection}/{id}"],
                       capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        return ["outbox-admin replay failed (%d): %s" % (r.returncode, r.stderr[-500:])]
    want = sum(1 for c in cases if c.get("result", {}).get("ok") and
               c["expect"] == "published") + sum(1 for c in cases if c.get("follow"))

    def replayed_now():
        return [m for m in sub.snapshot()[before:] if m[0].startswith("rp" + root[2:] + "/")]
    # Every published event once (fewer if some are missing: then the silence ends the wait).
    runner.wait_until(lambda: len(replayed_now()) >= want and sub.silent_for(0.3) or
                      sub.silent_for(2.0), 30, 0.05)
    replayed = replayed_now()
    problems = []
    live = {}
    for eid, copies in judge.by_id.items():
        live[eid] = copies[0]
    seen = set()
    for topic, payload, props, _ in replayed:
        eid = check.message_event_id(payload, props, judge.run["binary"])
        seen.add(eid)
        if eid not in live:
            problems.append("replay sent event %r, never published live" % eid)
            continue
        ltopic, lpayload, lprops, _ = live[eid]
        if topic[2:] != ltopic[2:]:
            problems.append("replay of %s: topic %r, live %r" % (eid, topic, ltopic))
        if not judge.run["binary"]:
            rp, lp = json.loads(payload), json.loads(lpayload)
            if rp.pop("replay", None) is not True or rp != lp:
                problems.append("replay of %s: payload differs from the live one beyond the "
                                "marker" % eid)
        if judge.run["v5"] and sorted(p for p in props if p != ("replay", "true")) != \
                sorted(lprops):
            problems.append("replay of %s: user properties %s, live %s" % (eid, props, lprops))
    for c in cases:
        if c.get("result", {}).get("ok") and c["expect"] == "published":
            eid = judge.event_of(c)[0]
            if eid not in seen:
                problems.append("case %d (%s): archived event %s not replayed" % (
                    c["n"], c["what"], eid))
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--relay", required=True)
    ap.add_argument("--admin", required=True)
    ap.add_argument("--writer", required=True)
    ap.add_argument("--contract", required=True)
    ap.add_argument("--node-dir")
    ap.add_argument("--c-consumer", help="contacts-consumer, run beside the others")
    ap.add_argument("--seed", type=int, help="the first seed (default: random, printed)")
    ap.add_argument("--seeds", type=int, default=1, help="seeds to run, from --seed on")
    ap.add_argument("--fill", type=int, default=0, help="random valid events added per run")
    ap.add_argument("--long", action="store_true",
                    help="the long form: 4 seeds, 400 random events per run (~5 minutes)")
    ap.add_argument("--share", type=int, default=2,
                    help="runs each case goes through, of the six (default 2; --long: 6)")
    ap.add_argument("--keep", action="store_true", help="keep the logs also when all passed")
    ap.add_argument("--runs", help="comma-separated run names (default: all: %s)" %
                    ",".join(r[0] for r in RUNS))
    opts = ap.parse_args()
    if not MONGO or not MQTT:
        sys.exit("fuzz: OUTBOX_TEST_MONGODB_URI and OUTBOX_TEST_MQTT_URI must be set "
                 "(tests/fixtures/with-servers)")
    if opts.long:
        opts.seeds, opts.fill, opts.share = max(opts.seeds, 4), max(opts.fill, 400), len(RUNS)
    seed = opts.seed if opts.seed is not None else random.SystemRandom().randrange(1, 1 << 31)
    table = json.loads(subprocess.run([opts.contract], capture_output=True, check=True,
                                      text=True).stdout)
    node_path, why = None, "no --node-dir given"
    if opts.node_dir:
        import languages_node
        node_path, why = languages_node.prepare(opts.node_dir, os.path.join(HERE, "..", "..",
                                                                            "examples"))
    if not node_path:
        print("fuzz: SKIP (part): the Node driver writer, the Node example writer and the Node "
              "consumer are left out: %s" % why)
    runs = [r for r in RUNS if not opts.runs or r[0] in opts.runs.split(",")]
    client = pymongo.MongoClient(MONGO)
    workdir = tempfile.mkdtemp(prefix="outbox-fuzz.")
    problems, totals = [], collections.Counter()
    started = time.time()
    for s in range(seed, seed + opts.seeds):
        print("fuzz: seed %d (repeat with --seed %d)" % (s, s), flush=True)
        for spec in runs:
            problems += run_one(opts, table, s, spec, node_path, client, workdir, totals)
    print("fuzz: %d events in %.0f s, seeds %d..%d: %s" % (
        sum(totals.values()), time.time() - started, seed, seed + opts.seeds - 1,
        " ".join("%s=%d" % kv for kv in sorted(totals.items()))))
    known = [p for p in problems if known_open(p)]
    problems = [p for p in problems if not known_open(p)]
    for p in known[:50]:
        print("KNOWN OPEN: %s [%s]" % (p, known_open(p)))
    for p in problems[:200]:
        print("FAIL: " + p)
    if problems:
        print("fuzz: %d problems; logs in %s; repeat with --seed %d" % (len(problems), workdir,
                                                                         seed))
        return 1
    if opts.keep:
        print("fuzz: logs kept in %s" % workdir)
    else:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
