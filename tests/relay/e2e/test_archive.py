#!/usr/bin/python3
# Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
"""The archive (--archive-collection) end to end: the relay archives each published event
before clearing it, keeps events pending while the archive refuses writes, stores nothing
twice across a kill -9 between the archive write and the clear; outbox-admin replay publishes
a window of the archive again, in seq order per entity, with the replay marker.

usage: test_archive.py OUTBOX_RELAY OUTBOX_ADMIN [TEST_NAME ...]   (under with-servers)
"""

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from relaytest import db_name  # noqa: E402 (the run's database names)
from relaytest import (MONGO_URI, MQTT_URI, Entities, Relay, Subscriber, event,  # noqa: E402
                       free_port, metric, pymongo, run_tests, wait_until)

RELAY_BIN = sys.argv[1] if len(sys.argv) > 1 else "outbox-relay"
ADMIN_BIN = sys.argv[2] if len(sys.argv) > 2 else "outbox-admin"
RUN = "%d" % os.getpid()
client = pymongo.MongoClient(MONGO_URI) if MONGO_URI else None
ARCHIVE = "archive"


def names(test):
    return db_name("archive_%s_%s" % (test, RUN)), "things", "arch-%s-%s" % (test, RUN)


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def failpoint(**kw):
    client.admin.command("configureFailPoint", "failCommand", **kw)


def archive_relay(dbname, cname, rname, extra=()):
    return Relay(RELAY_BIN, dbname, [cname], rname,
                 extra=["--archive-collection", ARCHIVE] + list(extra))


def check_archive(dbname, cname, ents):
    """Every event of @ents is in the archive exactly once, with the contract's fields."""
    arch = client[dbname][ARCHIVE]
    entries = list(arch.find({}))
    want = {eid: (ent, i + 1) for ent, ids in ents.ids.items() for i, eid in enumerate(ids)}
    check(len(entries) == len(want), "archive holds %d entries, %d events were published" %
          (len(entries), len(want)))
    for e in entries:
        check(e["_id"] in want, "archive entry %s is no published event" % e["_id"])
        ent, seq = want[e["_id"]]
        check(e["entityId"] == ent and e["seq"] == seq and e["collection"] == cname,
              "entry %s: %s" % (e["_id"], e))
        for field in ("type", "time", "data", "publishedAt", "partition"):
            check(field in e, "entry %s lacks %s" % (e["_id"], field))
    return entries


def member_id(relay, rname):
    """The member id ("<host>/<pid>/<hex>") @relay logged at start."""
    found = re.search(r"member (\S+) of group '%s'" % re.escape(rname), relay.log_text())
    check(found, "the relay did not log its member id")
    member = found.group(1)
    check(member.split("/")[1] == str(relay.proc.pid), "member id %s: not this one" % member)
    return member


def test_archive_then_clear():
    """Published events leave their documents and are in the archive, once each; the
    validator, the indexes and the TTL index are installed; the metrics count them."""
    dbname, cname, rname = names("basic")
    coll = client[dbname][cname]
    ents = Entities(coll)
    port = free_port()
    relay = archive_relay(dbname, cname, rname, ["--archive-ttl", "30d", "--metrics-listen",
                                                 "127.0.0.1:%d" % port])
    try:
        check(relay.wait_log("change stream open"), "relay did not open its stream")
        for i in range(20):
            ents.create("e%d" % i, 3)
        check(wait_until(lambda: ents.pending() == 0, 30), "%d events never cleared" %
              ents.pending())
        entries = check_archive(dbname, cname, ents)
        # Each entry names the group (--name) and the member that archived it (its instance
        # id "<host>/<pid>/<hex>", as the relay logs it at start).
        member = member_id(relay, rname)
        for e in entries:
            check(e.get("relay") == rname and e.get("member") == member,
                  "entry %s: relay %s, member %s (want %s, %s)" %
                  (e["_id"], e.get("relay"), e.get("member"), rname, member))
        arch = client[dbname][ARCHIVE]
        indexes = {ix["name"]: ix for ix in arch.list_indexes()}
        for name in ("outbox_archive_time", "outbox_archive_entity", "outbox_archive_type"):
            check(name in indexes, "index %s missing: %s" % (name, list(indexes)))
        check(indexes.get("outbox_archive_ttl", {}).get("expireAfterSeconds") == 30 * 86400,
              "TTL index: %s" % indexes.get("outbox_archive_ttl"))
        try:
            arch.insert_one({"_id": "x", "collection": cname, "entityId": 1, "seq": 1})
            raise AssertionError("the archive's validator accepted a malformed entry")
        except pymongo.errors.WriteError as e:
            check(e.code == 121, "malformed entry: %s" % e.details)
        # An entry written before members were recorded (no member) is still valid; a
        # member that is not a string is not.
        old = dict(entries[0], _id="old-entry")
        old.pop("member")
        arch.insert_one(old)
        try:
            arch.insert_one(dict(entries[0], _id="bad-member", member=7))
            raise AssertionError("the archive's validator accepted a member that is no string")
        except pymongo.errors.WriteError as e:
            check(e.code == 121, "bad member: %s" % e.details)
        check(metric(port, "outbox_relay_events_archived_total") == 60,
              "archived metric: %s" % metric(port, "outbox_relay_events_archived_total"))
        check(relay.stop() == 0, "relay did not exit 0")
    finally:
        relay.stop()


def healthz(port):
    try:
        return urllib.request.urlopen("http://127.0.0.1:%d/healthz" % port, timeout=5).read()
    except urllib.error.HTTPError as e:
        return e.read()


def test_archive_refused_keeps_events_pending():
    """While the server refuses the archive's inserts (failCommand on "insert"), published
    events stay in their documents, the log and /healthz say why; once it accepts them,
    everything is archived once and cleared."""
    dbname, cname, rname = names("refused")
    coll = client[dbname][cname]
    ents = Entities(coll)
    port = free_port()
    sub = Subscriber("outbox/%s/#" % cname)
    relay = archive_relay(dbname, cname, rname, ["--metrics-listen", "127.0.0.1:%d" % port])
    try:
        check(relay.wait_log("change stream open"), "relay did not open its stream")
        failpoint(mode="alwaysOn", data={"failCommands": ["insert"], "errorCode": 14031,
                                         "appName": "outbox-relay-clear"})
        for i in range(10):
            ents.create("r%d" % i, 2)
        check(wait_until(lambda: sub.count() >= 20, 30), "only %d published" % sub.count())
        check(wait_until(lambda: metric(port, "outbox_relay_archive_failing") == 1.0, 10),
              "archive_failing gauge not set")
        time.sleep(1.0)  # several retries
        check(ents.pending() == 20, "events were cleared without being archived: %d pending" %
              ents.pending())
        check(client[dbname][ARCHIVE].count_documents({}) == 0, "archived despite the failpoint")
        check(b"archive writes fail" in healthz(port), "/healthz: %s" % healthz(port))
        check("archiving to %s failed" % ARCHIVE in relay.log_text(), "the log does not say why")
        check(metric(port, "outbox_relay_archive_write_failures_total") >= 1, "no failure counted")
        failpoint(mode="off")
        check(wait_until(lambda: ents.pending() == 0, 30), "%d events never cleared" %
              ents.pending())
        check_archive(dbname, cname, ents)
        check(wait_until(lambda: metric(port, "outbox_relay_archive_failing") == 0.0, 10),
              "archive_failing gauge stuck")
        check(relay.stop() == 0, "relay did not exit 0")
    finally:
        failpoint(mode="off")
        relay.stop()
        sub.close()


def test_archive_unauthorized_pauses_publishing():
    """The archive write refused as not authorized (13, as for a user without insert on the
    archive; failCommand, since the test server has no custom roles): the relay treats it as
    it treats refused clears: it pauses publishing, says so in the log and the metrics, keeps
    everything pending, and resumes once the archive accepts writes."""
    dbname, cname, rname = names("unauthorized")
    ents = Entities(client[dbname][cname])
    port = free_port()
    sub = Subscriber("outbox/%s/#" % cname)
    relay = archive_relay(dbname, cname, rname, ["--metrics-listen", "127.0.0.1:%d" % port])
    try:
        check(relay.wait_log("change stream open"), "relay did not open its stream")
        failpoint(mode="alwaysOn", data={"failCommands": ["insert"], "errorCode": 13,
                                         "appName": "outbox-relay-clear"})
        for i in range(5):
            ents.create("u%d" % i, 1)
        # The first refused archive write pauses publishing: how many of the five went out
        # before it depends on timing (a loaded machine may batch them differently).
        check(wait_until(lambda: sub.count() >= 1, 20), "nothing published")
        check(wait_until(lambda: metric(port, "outbox_relay_mongodb_writes_refused") == 1.0, 10),
              "writes_refused not set")
        check("MongoDB refuses the relay's writes" in relay.log_text(), "the log does not say")
        time.sleep(0.5)  # what was in flight at the refusal arrives
        before = sub.count()
        for i in range(5, 10):
            ents.create("u%d" % i, 1)
        time.sleep(1.5)
        check(sub.count() == before, "published while the archive refused writes: %d, then %d"
              % (before, sub.count()))
        check(ents.pending() == 10, "%d pending, want 10" % ents.pending())
        failpoint(mode="off")
        check(wait_until(lambda: ents.pending() == 0, 30), "%d events never cleared" %
              ents.pending())
        check_archive(dbname, cname, ents)
        check(relay.stop() == 0, "relay did not exit 0")
    finally:
        failpoint(mode="off")
        relay.stop()
        sub.close()


def test_archive_validator_refuses():
    """The archive's validator refuses the entries (someone installed a stricter one): the
    inserts fail one by one (write errors, not a command error), the events stay pending;
    outbox-admin ensure-schema puts the archive contract back and everything is archived
    once and cleared."""
    dbname, cname, rname = names("validator")
    coll = client[dbname][cname]
    ents = Entities(coll)
    sub = Subscriber("outbox/%s/#" % cname)
    relay = archive_relay(dbname, cname, rname)
    try:
        check(relay.wait_log("change stream open"), "relay did not open its stream")
        ents.create("v0", 1)
        check(wait_until(lambda: ents.pending() == 0, 20), "first event never cleared")
        client[dbname].command("collMod", ARCHIVE,
                               validator={"$jsonSchema": {"required": ["never"]}})
        for i in range(1, 6):
            ents.create("v%d" % i, 2)
        check(wait_until(lambda: sub.count() >= 11, 20), "only %d published" % sub.count())
        time.sleep(1.0)
        check(ents.pending() == 10, "events cleared without being archived: %d pending" %
              ents.pending())
        check("archiving to %s failed" % ARCHIVE in relay.log_text(), "the log does not say why")
        fixed = admin(dbname, cname, "ensure-schema")
        check(fixed.returncode == 0, "ensure-schema: %s" % fixed.stderr)
        check(wait_until(lambda: ents.pending() == 0, 30), "%d events never cleared" %
              ents.pending())
        check_archive(dbname, cname, ents)
        check(relay.stop() == 0, "relay did not exit 0")
    finally:
        relay.stop()
        sub.close()


def test_kill9_between_archive_and_clear():
    """The clears fail (failCommand on "update") after the archive writes succeeded; the relay
    is killed with SIGKILL in that state and restarted: every event ends up cleared and in the
    archive exactly once, each entry still the first copy (its publishedAt unchanged)."""
    dbname, cname, rname = names("kill9")
    coll = client[dbname][cname]
    ents = Entities(coll)
    arch = client[dbname][ARCHIVE]
    quick = ["--lease-ttl-ms", "3000", "--lease-renew-ms", "500", "--lease-margin-ms", "1000"]
    relay = archive_relay(dbname, cname, rname, quick)
    try:
        check(relay.wait_log("change stream open"), "relay did not open its stream")
        failpoint(mode="alwaysOn", data={"failCommands": ["update"], "errorCode": 91,
                                         "appName": "outbox-relay-clear"})
        for i in range(15):
            ents.create("k%d" % i, 2)
        check(wait_until(lambda: arch.count_documents({}) == 30, 30),
              "only %d events archived" % arch.count_documents({}))
        time.sleep(0.5)  # retried archive writes of the same events meanwhile
        first = {e["_id"]: e["publishedAt"] for e in arch.find({})}
        check(ents.pending() == 30, "a clear went through: %d pending" % ents.pending())
        relay.kill()
        failpoint(mode="off")
        relay = archive_relay(dbname, cname, rname, quick)
        check(wait_until(lambda: ents.pending() == 0, 30), "%d events never cleared" %
              ents.pending())
        entries = check_archive(dbname, cname, ents)
        for e in entries:
            check(e["publishedAt"] == first[e["_id"]], "entry %s was written again" % e["_id"])
        check(relay.stop() == 0, "relay did not exit 0")
    finally:
        failpoint(mode="off")
        relay.stop()


def admin(dbname, cname, *args):
    cmd = [ADMIN_BIN, "--mongodb-uri", MONGO_URI, "--database", dbname, "--collection", cname,
           "--archive-collection", ARCHIVE, "--mqtt-uri", MQTT_URI] + list(args)
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)


def test_replay_window():
    """outbox-admin replay of a time window: a new subscriber gets every event of the window
    once, in seq order per entity, with the marker in the payload and as a user property;
    --dry-run counts the same events and sends nothing."""
    dbname, cname, rname = names("replay")
    coll = client[dbname][cname]
    ents = Entities(coll)
    relay = archive_relay(dbname, cname, rname)
    try:
        check(relay.wait_log("change stream open"), "relay did not open its stream")
        for i in range(10):
            ents.create("old%d" % i, 2)
        check(wait_until(lambda: ents.pending() == 0, 30), "old events never cleared")
        time.sleep(1.1)
        since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        time.sleep(1.1)
        for i in range(8):
            ents.create("w%d" % i, 3)
        for i in range(8):
            ents.append("w%d" % i, 2)
        check(wait_until(lambda: ents.pending() == 0, 30), "window events never cleared")
        check(relay.stop() == 0, "relay did not exit 0")
    finally:
        relay.stop()
    dry = admin(dbname, cname, "replay", "--since", since, "--dry-run", "--json")
    check(dry.returncode == 0, "dry run: %s" % dry.stderr)
    check(json.loads(dry.stdout)["matching"] == 40, "dry run: %s" % dry.stdout)
    for args, want in [(["--id", "w3"], 5), (["--event-id", ents.ids["w3"][1]], 1),
                       (["--type", "Changed", "--until", since], 20), ([], 60)]:
        out = admin(dbname, cname, "replay", "--dry-run", "--json", *args)
        check(out.returncode == 0 and json.loads(out.stdout)["matching"] == want,
              "replay %s: %s %s (want %d)" % (args, out.stdout, out.stderr, want))
    status = admin(dbname, cname, "status", "--json")
    check(status.returncode == 0, "status: %s" % status.stderr)
    check(json.loads(status.stdout)["archive"]["entries"] == 60, "status: %s" % status.stdout)
    sub = Subscriber("replayed/#")
    try:
        run = admin(dbname, cname, "replay", "--since", since, "--topic",
                    "replayed/{collection}/{id}", "--rate", "2000", "--json")
        check(run.returncode == 0, "replay: %s %s" % (run.stdout, run.stderr))
        check(json.loads(run.stdout)["replayed"] == 40, "replay: %s" % run.stdout)
        check(wait_until(lambda: sub.count() >= 40, 20), "only %d replayed" % sub.count())
        time.sleep(0.5)
        msgs = sub.snapshot()
        check(len(msgs) == 40, "%d messages for 40 events" % len(msgs))
        seen, order = set(), {}
        for topic, payload, props in msgs:
            ce = json.loads(payload)
            check(ce.get("replay") is True, "no replay attribute: %s" % ce)
            check(props.get("replay") == "true", "no replay user property: %s" % props)
            check(ce["id"] not in seen, "event %s replayed twice" % ce["id"])
            seen.add(ce["id"])
            check(ce["subject"].startswith("w"), "event outside the window: %s" % ce["subject"])
            order.setdefault(ce["subject"], []).append(ce["seq"])
        for ent, seqs in order.items():
            check(seqs == [1, 2, 3, 4, 5], "%s replayed as %s" % (ent, seqs))
    finally:
        sub.close()
    # Binary mode, as the relay sends it: the data as payload, the attributes and the marker
    # as user properties.
    sub = Subscriber("binary/#")
    try:
        run = admin(dbname, cname, "replay", "--id", "w1", "--payload-mode", "binary",
                    "--topic", "binary/{collection}/{id}", "--json")
        check(run.returncode == 0, "binary replay: %s %s" % (run.stdout, run.stderr))
        check(wait_until(lambda: sub.count() >= 5, 20), "only %d replayed" % sub.count())
        for _, payload, props in sub.snapshot():
            check(props.get("replay") == "true" and props.get("specversion") == "1.0" and
                  props.get("subject") == "w1", "binary replay props: %s" % props)
            check("n" in json.loads(payload), "binary payload: %s" % payload)
        check([int(p["seq"]) for _, _, p in sub.snapshot()] == [1, 2, 3, 4, 5], "binary order")
    finally:
        sub.close()


EXAMPLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "examples",
                       "python", "bootstrap_consumer.py")


def test_bootstrap_while_writing():
    """examples/python/bootstrap_consumer.py joins while a writer keeps appending: its read
    model (event ids per entity, in the order applied) ends equal to what was written, in seq
    order with nothing missing or doubled, and to what a consumer subscribed from the start
    received."""
    dbname, cname, rname = names("bootstrap")
    coll = client[dbname][cname]
    ents = Entities(coll)
    old = Subscriber("outbox/%s/#" % cname)
    relay = archive_relay(dbname, cname, rname)
    stop = threading.Event()
    lines = []

    def write():
        i = 0
        while not stop.is_set():
            eid = "b%d" % (i % 12)
            if eid in ents.seq:
                ents.append(eid, 1 + i % 2)
            else:
                ents.create(eid, 2)
            i += 1
            time.sleep(0.01)

    writer = threading.Thread(target=write)
    boot = None
    try:
        check(relay.wait_log("change stream open"), "relay did not open its stream")
        writer.start()
        time.sleep(2)
        boot = subprocess.Popen(
            [sys.executable, EXAMPLE, MQTT_URI, "outbox/%s/#" % cname, "replay-boot-%s" % RUN,
             "--", ADMIN_BIN, "--mongodb-uri", MONGO_URI, "--database", dbname, "--collection",
             cname, "--archive-collection", ARCHIVE, "--mqtt-uri", MQTT_URI],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        reader = threading.Thread(target=lambda: lines.extend(
            line.decode() for line in iter(boot.stdout.readline, b"")))
        reader.start()
        check(wait_until(lambda: any(x.startswith("bootstrapped") for x in lines), 60),
              "no bootstrap: %s %s" % (lines[-5:], boot.poll()))
        replayed = int([x for x in lines if x.startswith("bootstrapped")][0].split()[1])
        check(replayed > 0, "the bootstrap replayed nothing")
        time.sleep(2)  # live events after the bootstrap
        stop.set()
        writer.join()
        check(wait_until(lambda: ents.pending() == 0, 30), "events never cleared")
        time.sleep(1)
        boot.send_signal(signal.SIGTERM)
        boot.wait(30)
        reader.join(10)
        model = json.loads(lines[-1])
        want = {ent: ids for ent, ids in ents.ids.items()}
        check(model == want, "bootstrapped model differs: %d entities, %d events; want %d, %d" %
              (len(model), sum(map(len, model.values())), len(want),
               sum(map(len, want.values()))))
        got_old = {}
        for _, payload, _ in old.snapshot():
            ce = json.loads(payload)
            if ce["id"] not in got_old.setdefault(ce["subject"], []):
                got_old[ce["subject"]].append(ce["id"])
        check(got_old == want, "the old consumer's model differs")
        check(relay.stop() == 0, "relay did not exit 0")
    finally:
        stop.set()
        if writer.is_alive():
            writer.join()
        if boot and boot.poll() is None:
            boot.kill()
        relay.stop()
        old.close()


FEED = os.path.join(os.path.dirname(EXAMPLE), "archive_feed.py")


class Feed:
    """examples/python/archive_feed.py as a process, its "event" lines collected."""

    def __init__(self, dbname, token):
        self.proc = subprocess.Popen([sys.executable, FEED, MONGO_URI, dbname, ARCHIVE, token],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.lines = []
        self.reader = threading.Thread(target=lambda: self.lines.extend(
            x.decode().split() for x in iter(self.proc.stdout.readline, b"")))
        self.reader.start()
        check(wait_until(lambda: ["watching"] in self.lines, 20), "the feed did not start")

    def events(self):
        return [x for x in list(self.lines) if x[0] == "event"]

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(20)
        self.reader.join(10)


def test_archive_feed_resumes():
    """The change-stream feed example sees every archived event once, in commit order, and
    after a restart continues after the last one it handled (events archived while it was
    down included)."""
    dbname, cname, rname = names("feed")
    ents = Entities(client[dbname][cname])
    token = os.path.join(os.environ.get("OUTBOX_TEST_WORKDIR", "/tmp"), "feed-%s.token" % RUN)
    relay = archive_relay(dbname, cname, rname)
    feed = None
    try:
        check(relay.wait_log("change stream open"), "relay did not open its stream")
        ents.create("f0", 1)  # the archive exists once the relay wrote to it
        check(wait_until(lambda: ents.pending() == 0, 20), "first event never cleared")
        feed = Feed(dbname, token)
        for i in range(1, 6):
            ents.create("f%d" % i, 2)
        check(wait_until(lambda: len(feed.events()) == 10, 20), "feed saw %d of 10" %
              len(feed.events()))
        feed.stop()
        for i in range(6, 9):
            ents.create("f%d" % i, 3)
        check(wait_until(lambda: ents.pending() == 0, 20), "events never cleared")
        feed = Feed(dbname, token)
        check(wait_until(lambda: len(feed.events()) == 9, 20), "resumed feed saw %d of 9" %
              len(feed.events()))
        time.sleep(0.5)
        got = feed.events()
        check(len(got) == 9, "resumed feed repeated events: %d" % len(got))
        # Entities are archived in any order; an entity's events in seq order.
        for i in range(6, 9):
            check([x[4] for x in got if x[2] == "f%d" % i] == ents.ids["f%d" % i],
                  "resumed feed, f%d: %s" % (i, got))
        check(relay.stop() == 0, "relay did not exit 0")
    finally:
        if feed and feed.proc.poll() is None:
            feed.proc.kill()
        relay.stop()


CONSUMER = os.environ.get("OUTBOX_TEST_CONTACTS_CONSUMER")


def test_contacts_consumer_catches_up():
    """examples/contacts-consumer --archive joins while a writer keeps changing contacts: it
    catches up from the archive, then goes live; at the end its directory holds every
    contact's last email and its inbox every contact's last seq, applied in order (no gap)."""
    if not CONSUMER:
        print("  (skipped: the contacts consumer is not built)")
        return
    dbname, _, rname = names("contacts")
    cname = "contacts"
    reader_db = db_name("reader_%s" % RUN)
    ents = Entities(client[dbname][cname])
    email = {}
    relay = archive_relay(dbname, cname, rname)
    stop = threading.Event()

    def change(i, n):
        cid = "c%d" % (i % 10)
        email[cid] = "%s-%d@example.org" % (cid, n)
        if cid not in ents.seq:
            data = {"name": {"firstName": "F", "lastName": cid}, "email": email[cid],
                    "company": {"companyName": "Acme"}}
            ents.create(cid, events=[event(1, "ContactCreated", data)])
        else:
            ents.append(cid, events=[event(ents.seq[cid] + 1, "ContactEmailUpdated",
                                           {"email": email[cid]})])

    def write():
        n = 100
        while not stop.is_set():
            change(n, n)
            n += 1
            time.sleep(0.02)

    writer = threading.Thread(target=write)
    consumer, lines = None, []
    try:
        check(relay.wait_log("change stream open"), "relay did not open its stream")
        for n in range(40):
            change(n, n)
        check(wait_until(lambda: ents.pending() == 0, 30), "old events never cleared")
        writer.start()
        consumer = subprocess.Popen(
            [CONSUMER, "--mqtt-uri", MQTT_URI, "--mongodb-uri", MONGO_URI, "--database",
             reader_db, "--topic", "outbox/contacts/#", "--client-id", "boot-%s" % RUN,
             "--archive", ARCHIVE, "--outbox-database", dbname],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        reader = threading.Thread(target=lambda: lines.extend(
            x.decode() for x in iter(consumer.stdout.readline, b"")))
        reader.start()
        check(wait_until(lambda: any("caught up" in x for x in lines), 60),
              "no catch-up: %s" % lines[-5:])
        caught = [x for x in lines if "caught up" in x][0]
        check(int(caught.split("with ")[1].split()[0]) >= 40, "caught up with less: " + caught)
        time.sleep(2)
        stop.set()
        writer.join()
        check(wait_until(lambda: ents.pending() == 0, 30), "events never cleared")
        directory = client[reader_db]["directory"]

        def converged():
            docs = {d["_id"]: d for d in directory.find({})}
            return all(cid in docs and docs[cid].get("email") == email[cid] and
                       docs[cid].get("name", {}).get("lastName") == cid and
                       docs[cid].get("inboxSeq") == ents.seq[cid] for cid in email)
        check(wait_until(converged, 30), "the directory did not converge: %s" %
              list(directory.find({}, {"email": 1, "inboxSeq": 1})))
        check(not any("gap detected" in x or "reordered" in x for x in lines),
              "applied out of order: %s" % [x for x in lines if "gap" in x or "reord" in x][:3])
        # A replay of everything to the topics it consumes: its inbox has seen every event,
        # so nothing is applied twice and the directory does not change.
        before = list(directory.find({}, sort=[("_id", 1)]))
        seen = len(lines)
        total = sum(len(v) for v in ents.ids.values())
        run = admin(dbname, cname, "replay", "--json")
        check(run.returncode == 0 and json.loads(run.stdout)["replayed"] == total,
              "replay: %s %s" % (run.stdout, run.stderr))
        check(wait_until(lambda: sum("duplicate" in x for x in lines[seen:]) == total, 30),
              "the consumer reported %d duplicates of %d" %
              (sum("duplicate" in x for x in lines[seen:]), total))
        check(not any("applied" in x for x in lines[seen:]), "a replayed event was applied")
        check(list(directory.find({}, sort=[("_id", 1)])) == before, "the directory changed")
        check(relay.stop() == 0, "relay did not exit 0")
    finally:
        stop.set()
        if writer.is_alive():
            writer.join()
        if consumer and consumer.poll() is None:
            consumer.send_signal(signal.SIGTERM)
            consumer.wait(20)
        relay.stop()


def test_group_members_archive_their_partitions():
    """Two relays of one group: each entry records the partition of its entity (as MongoDB's
    hashed-index key places it); a member killed with SIGKILL under load loses nothing from
    the archive: every event is archived exactly once when the other took over."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from grouptest import LEASE_OPTS, partition_of
    dbname, cname, rname = names("group")
    ents = Entities(client[dbname][cname])
    arch = client[dbname][ARCHIVE]
    members = [archive_relay(dbname, cname, rname, LEASE_OPTS) for _ in range(2)]
    stop = threading.Event()

    def write():
        i = 0
        while not stop.is_set():
            ents.append("g%d" % (i % 60), 1)
            i += 1
            time.sleep(0.005)

    writer = threading.Thread(target=write)
    try:
        for m in members:
            check(m.wait_log("change stream open"), "a member did not open its stream")
        for i in range(60):
            ents.create("g%d" % i, 2)
        check(wait_until(lambda: ents.pending() == 0, 30), "events never cleared")
        entries = check_archive(dbname, cname, ents)
        ids = [member_id(m, rname) for m in members]
        for e in entries:
            check(e.get("member") in ids and e.get("relay") == rname,
                  "%s archived by %s of %s, not by a member of %s: %s" %
                  (e["_id"], e.get("member"), e.get("relay"), rname, ids))
            check(e["partition"] == partition_of(e["entityId"]),
                  "%s archived with partition %s, its partition is %d" %
                  (e["entityId"], e["partition"], partition_of(e["entityId"])))
        writer.start()
        time.sleep(1.5)
        members[0].kill()
        time.sleep(1.5)
        stop.set()
        writer.join()
        check(wait_until(lambda: ents.pending() == 0, 40), "%d events never cleared" %
              ents.pending())
        check_archive(dbname, cname, ents)
        check(arch.count_documents({}) == sum(len(v) for v in ents.ids.values()),
              "archive count")
        check(members[1].stop() == 0, "the surviving member did not exit 0")
    finally:
        stop.set()
        if writer.is_alive():
            writer.join()
        for m in members:
            m.stop()


TESTS = [test_archive_then_clear, test_archive_refused_keeps_events_pending,
         test_archive_unauthorized_pauses_publishing, test_archive_validator_refuses,
         test_kill9_between_archive_and_clear, test_replay_window, test_bootstrap_while_writing,
         test_archive_feed_resumes, test_contacts_consumer_catches_up,
         test_group_members_archive_their_partitions]


if __name__ == "__main__":
    sys.exit(run_tests("relay-archive", TESTS, sys.argv[3:]))
