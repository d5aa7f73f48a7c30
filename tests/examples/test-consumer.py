#!/usr/bin/python3
# Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
#
# contacts-consumer as a process, fed by hand-made CloudEvents over a real broker: duplicates,
# a gap, a late event, an unreadable message, and a restart (with a message published while it
# was down) never double-apply or lose anything. Checks both its output and its read model.
#
# usage: test-consumer.py PATH/TO/contacts-consumer
#        (OUTBOX_TEST_MONGODB_URI and OUTBOX_TEST_MQTT_URI must be set)
import json
import os
import subprocess
import sys
import time
from urllib.parse import urlparse

import exampletest

try:
    import pymongo
    import paho.mqtt.client as mqtt
    from paho.mqtt.packettypes import PacketTypes
    from paho.mqtt.properties import Properties
except ImportError:
    print("contacts-consumer: needs pymongo and paho-mqtt (run with /usr/bin/python3)")
    sys.exit(77)

CONSUMER = sys.argv[1]
MONGO = os.environ["OUTBOX_TEST_MONGODB_URI"]
MQTT = urlparse(os.environ["OUTBOX_TEST_MQTT_URI"])
DB = os.environ.get("OUTBOX_TEST_DB_PREFIX", "") + "consumer_test_%d" % os.getpid()
CLIENT = "consumer-test-%d" % os.getpid()
ENTITY = "6b0251c7d823bf3bab0bd1aa"
CHECKS = exampletest.Checks("contacts-consumer")
check = CHECKS.check


def event(eid, seq, etype, data):
    return {"specversion": "1.0", "id": eid, "source": "/contacts/contacts", "type": etype,
            "subject": ENTITY, "time": "2026-11-22T00:00:00Z",
            "datacontenttype": "application/json", "seq": seq, "data": data}


def publisher():
    c = mqtt.Client(client_id="consumer-test-pub-%d" % os.getpid(), protocol=mqtt.MQTTv5)
    c.connect(MQTT.hostname, MQTT.port)
    c.loop_start()
    return c


def publish(c, ev, raw=None):
    props = Properties(PacketTypes.PUBLISH)
    if ev:
        props.UserProperty = [("event-id", ev["id"]), ("event-type", ev["type"]),
                              ("entity-id", ENTITY), ("seq", str(ev["seq"]))]
    payload = raw if raw is not None else json.dumps(ev)
    c.publish("outbox/contacts/" + ENTITY, payload, qos=1, properties=props).wait_for_publish()


class Consumer:
    def __init__(self, n):
        self.log = os.path.join(os.environ.get("OUTBOX_TEST_WORKDIR", "/tmp"),
                                "consumer-%d-%d.log" % (os.getpid(), n))
        self.out = open(self.log, "w")
        self.proc = subprocess.Popen([CONSUMER, "--mqtt-uri", os.environ["OUTBOX_TEST_MQTT_URI"],
                                      "--mongodb-uri", MONGO, "--database", DB,
                                      "--client-id", CLIENT],
                                     stdout=self.out, stderr=subprocess.STDOUT)

    def lines(self):
        with open(self.log) as f:
            return [l.rstrip("\n") for l in f]

    def wait_for(self, pred, timeout=15):
        end = time.time() + timeout
        while time.time() < end:
            if pred(self.lines()):
                return True
            time.sleep(0.1)
        return False

    def stop(self):
        status, _ = exampletest.stop(self.proc, 15)
        self.out.close()
        return status


def count(lines, prefix):
    return sum(1 for l in lines if l.startswith(prefix))


def first_run(pub):
    con = Consumer(1)
    check("consumer subscribes", con.wait_for(lambda ls: any("subscribed to" in l for l in ls)))
    e1 = event("a1", 1, "ContactCreated", {"name": {"firstName": "Ada", "lastName": "L"},
                                           "email": "ada@x.org",
                                           "company": {"companyName": "Engines"}})
    e2 = event("a2", 2, "ContactNameUpdated", {"name": {"firstName": "Augusta", "lastName": "K"}})
    e3 = event("a3", 3, "ContactCompanyUpdated", {"company": {"companyName": "Estates"}})
    e4 = event("a4", 4, "ContactEmailUpdated", {"email": "countess@x.org"})
    for ev in (e1, e2, e2, e4, e3, e1):
        publish(pub, ev)
    publish(pub, None, raw="this is not an event")
    done = con.wait_for(lambda ls: count(ls, "consumer: duplicate") >= 2 and
                        count(ls, "consumer: applied") >= 4 and
                        count(ls, "consumer: skipped") >= 1)
    lines = con.lines()
    check("all deliveries processed", done, lines)
    applied = [l for l in lines if l.startswith("consumer: applied")]
    check("four events applied once each", len(applied) == 4, applied)
    check("seq 1, 2 in order", len(applied) == 4 and " seq=1 in-order" in applied[0] and
          " seq=2 in-order" in applied[1], applied)
    check("seq 4 after 2 reports a gap", len(applied) == 4 and "seq=4 gap" in applied[2] and
          "seq 3..3 not seen yet" in applied[2], applied)
    check("seq 3 after 4 reports reordering", len(applied) == 4 and "seq=3 late" in applied[3] and
          "arrived after seq 4" in applied[3], applied)
    check("two duplicates skipped", count(lines, "consumer: duplicate") == 2, lines)
    check("unreadable message reported", count(lines, "consumer: skipped unreadable") == 1, lines)
    check("first consumer exits 0", con.stop() == 0)
    return e2, e4


def read_model():
    client = pymongo.MongoClient(MONGO)
    doc = client[DB]["directory"].find_one({"_id": ENTITY})
    ledger = client[DB]["directory_inbox"].count_documents({})
    client.close()
    return doc, ledger


def second_run(pub, e2, e4):
    # Published while no consumer runs: the broker keeps it for the persistent session.
    publish(pub, event("a5", 5, "ContactDeleted", {}))
    con = Consumer(2)
    got = con.wait_for(lambda ls: any("applied ContactDeleted" in l for l in ls))
    check("event published while down arrives after restart", got, con.lines())
    publish(pub, e2)
    publish(pub, e4)
    got = con.wait_for(lambda ls: count(ls, "consumer: duplicate") >= 2)
    lines = con.lines()
    check("redeliveries after restart are duplicates", got, lines)
    check("nothing applied twice after restart", count(lines, "consumer: applied") == 1, lines)
    check("second consumer exits 0", con.stop() == 0)
    check("directory printed at exit", any("directory by company" in l for l in con.lines()))


def main():
    pub = publisher()
    try:
        e2, e4 = first_run(pub)
        doc, _ = read_model()
        check("read model: name from seq 2", doc and doc["name"]["firstName"] == "Augusta", doc)
        check("read model: email from seq 4", doc and doc["email"] == "countess@x.org", doc)
        check("read model: company from seq 3", doc and doc["company"]["companyName"] == "Estates")
        check("read model: inboxSeq is 4", doc and doc["inboxSeq"] == 4, doc)
        second_run(pub, e2, e4)
        doc, ledger = read_model()
        check("read model: deleted after restart", doc and doc["deleted"] is True, doc)
        check("read model: five event ids recorded", doc and sorted(doc["inbox"]) ==
              ["a1", "a2", "a3", "a4", "a5"], doc)
        check("ledger holds five entries", ledger == 5, ledger)
    finally:
        pub.loop_stop()
        pub.disconnect()
        client = pymongo.MongoClient(MONGO)
        client.drop_database(DB)
        client.close()
    return CHECKS.summary()


if __name__ == "__main__":
    sys.exit(main())
