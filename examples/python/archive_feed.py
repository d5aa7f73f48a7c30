#!/usr/bin/python3
# Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
"""A live, resumable pull feed of published events: watch the relay's archive collection
(--archive-collection) with a change stream, in commit order, and keep the resume token in a
file so that a restart continues exactly after the last event handled (relay/README.md, "The
archive and replay"). Each archived event is inserted once and never changed, so the feed
watches inserts only.

usage: archive_feed.py MONGODB-URI DATABASE ARCHIVE-COLLECTION TOKEN-FILE
prints one line per event: "event COLLECTION ENTITY SEQ EVENT-ID TYPE", until SIGTERM/SIGINT.
"""
import os
import signal
import sys

import pymongo
from bson import json_util

stopping = []


def load_token(path):
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json_util.loads(f.read())


def save_token(path, token):
    # Written after the event is handled, and atomically: a crash in between handles that
    # event again after the restart (at least once), never skips it.
    with open(path + ".tmp", "w") as f:
        f.write(json_util.dumps(token))
    os.replace(path + ".tmp", path)


def main(uri, db, archive, token_path):
    coll = pymongo.MongoClient(uri)[db][archive]
    signal.signal(signal.SIGTERM, lambda *args: stopping.append(1))
    token = load_token(token_path)
    with coll.watch([{"$match": {"operationType": "insert"}}], resume_after=token,
                    max_await_time_ms=200) as stream:
        print("watching", flush=True)
        while not stopping:
            change = stream.try_next()
            if change is None:
                continue
            e = change["fullDocument"]
            print("event %s %s %d %s %s" % (e["collection"], e["entityId"], e["seq"], e["_id"],
                                            e["type"]), flush=True)
            save_token(token_path, stream.resume_token)


if __name__ == "__main__":
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    try:
        main(*sys.argv[1:])
    except KeyboardInterrupt:
        pass
