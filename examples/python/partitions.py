# Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
"""The topic filters of a consumer instance that takes a set of the relay's partitions
(relay/README.md, "Consumers that scale out", which states the grammar; the C consumer's
examples/contacts-consumer/topics.c and the Node consumer's partitions.js follow the same one,
all three tested against tests/fixtures/partition-sets.json).

A set is one or more items separated by commas, each a partition N or a range N-M with N <= M,
numbers in ASCII decimal digits below MAX_PARTITIONS, every partition at most once; no signs,
spaces or empty items. With a set, the filter must hold "{partition}" exactly once; without
one it must not hold it (an instance would otherwise subscribe to everything, or to nothing)."""
import re

MAX_PARTITIONS = 4096  # the relay's --partitions limit
PLACEHOLDER = "{partition}"
_ITEM = re.compile(r"([0-9]+)(?:-([0-9]+))?")


def parse_set(text):
    """The sorted partitions of @text; ValueError saying why when it is not a set."""
    parts = set()
    for item in text.split(","):
        m = _ITEM.fullmatch(item)
        lo, hi = (int(m.group(1)), int(m.group(2) or m.group(1))) if m else (None, None)
        if m is None or hi < lo or hi >= MAX_PARTITIONS:
            raise ValueError("partition set %r: expected numbers and ranges below %d, each "
                             "once, e.g. 0-7 or 0,2,5-6" % (text, MAX_PARTITIONS))
        if parts.intersection(range(lo, hi + 1)):
            raise ValueError("partition set %r names a partition twice" % text)
        parts.update(range(lo, hi + 1))
    return sorted(parts)


def filters(topic, partitions=None):
    """The filters to subscribe to: @topic alone without a set, else one per partition of the
    set @partitions (a string such as "0-7,12"), "{partition}" replaced, in increasing order."""
    if partitions is None:
        if PLACEHOLDER in topic:
            raise ValueError("the topic filter holds {partition}: give a partition set too")
        return [topic]
    if topic.count(PLACEHOLDER) != 1:
        raise ValueError("a partition set needs a topic filter with one {partition}, e.g. "
                         "outbox/contacts/{partition}/#")
    return [topic.replace(PLACEHOLDER, str(p)) for p in parse_set(partitions)]
